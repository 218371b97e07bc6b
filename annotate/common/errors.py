"""The error every service raises for a request the domain refuses."""

from __future__ import annotations


class ServiceError(Exception):
    """A request the domain refuses, with a message a person can act on."""


class NotAllowed(ServiceError):
    """The person may not do this at all (not: this request is wrong)."""
