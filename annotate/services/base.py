"""The error every service raises for a request the domain refuses."""

from __future__ import annotations


class ServiceError(Exception):
    """A request the domain refuses, with a message a person can act on."""
