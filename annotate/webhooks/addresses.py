"""Where a webhook may go: http and https URLs, to public addresses only unless
CLAIMDESK_WEBHOOK_ALLOW_PRIVATE is on (so that a URL cannot make the server call this
machine or its private network: the admin, a database, a cloud's metadata address).

Checked twice: the URL when a lead registers it (its scheme, and its host when that is an
address or a local name), and the addresses its name resolves to before every attempt.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings

LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}


def is_private(address: str) -> bool:
    """Whether an IP address is this machine's or a private network's (not the internet's)."""
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return not ip.is_global or ip.is_multicast


def url_problem(url: str) -> str | None:
    """Why a URL cannot be an endpoint, or None. Only http and https, with a host; a name or
    address of this machine or a private network only when CLAIMDESK_WEBHOOK_ALLOW_PRIVATE
    is on. A host name is checked again, resolved, at each attempt (sending.check_address)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError for a port that is not a number)
    except ValueError:
        return "Not a URL."
    if parts.scheme not in ("http", "https"):
        return "Only http:// and https:// URLs can receive webhooks."
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        return "The URL has no host."
    if parts.username or parts.password:
        return "Put no user name or password in the URL: deliveries are signed instead."
    if settings.CLAIMDESK_WEBHOOK_ALLOW_PRIVATE:
        return None
    try:
        private = is_private(host)
    except ValueError:  # a name, not an address
        private = host in LOCAL_NAMES or host.endswith(".localhost")
    if private:
        return (
            "That address is this server's or a private network's; webhooks go to public "
            "addresses (an administrator can allow private ones: CLAIMDESK_WEBHOOK_ALLOW_PRIVATE)."
        )
    return None


def check_address(url: str) -> str | None:
    """Why the URL's host may not be called now, or None: every address its name resolves
    to must be public unless CLAIMDESK_WEBHOOK_ALLOW_PRIVATE is on. (The name is resolved
    again by the HTTP client: a DNS server that answers differently the second time is not
    stopped; the URL is the lead's responsibility, docs/webhooks.md.)"""
    if settings.CLAIMDESK_WEBHOOK_ALLOW_PRIVATE:
        return None
    parts = urlsplit(url)
    try:
        found = socket.getaddrinfo(parts.hostname, parts.port or 443, type=socket.SOCK_STREAM)
    except OSError as exc:
        return f"The host name does not resolve ({exc})."
    private = sorted({info[4][0] for info in found if is_private(info[4][0])})
    if private:
        return f"The host resolves to a private address ({', '.join(private)}): not sent."
    return None
