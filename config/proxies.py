"""The address a request came from, for login throttling (django-axes keys its lockouts on
username and address).

Without a reverse proxy in front (CLAIMDESK_PROXY_COUNT=0, the default) it is REMOTE_ADDR:
an X-Forwarded-For header is the client's to write, and taking it would let anyone escape a
lockout by changing it. Behind proxies, REMOTE_ADDR is the last proxy's for everyone -- so
five wrong passwords for a username from anywhere would lock that username out for all --
and the client's address is the one the first of them appended to X-Forwarded-For: with n
proxies that each append the address they received the request from, the n-th entry from
the right. Entries further left came with the request and are not trusted.

django-ipware, which django-axes can use instead, counts proxies differently: it returns
no address at all unless the header holds exactly the expected chain, which would put every
such request under one shared key again.
"""

from __future__ import annotations

import ipaddress

from django.conf import settings


def client_ip(request) -> str | None:
    """AXES_CLIENT_IP_CALLABLE: the client's address as the configured proxies saw it."""
    remote = request.META.get("REMOTE_ADDR")
    count = settings.CLAIMDESK_PROXY_COUNT
    if count <= 0:
        return remote
    header = request.META.get("HTTP_X_FORWARDED_FOR", "")
    forwarded = [part.strip() for part in header.split(",") if part.strip()]
    if len(forwarded) < count:  # it did not come through every proxy
        return remote
    try:
        return str(ipaddress.ip_address(forwarded[-count]))
    except ValueError:  # not an address: a proxy that writes something else there
        return remote
