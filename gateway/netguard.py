"""Which network addresses the gateway may reach on behalf of a URL someone else chose.

Agents and chat users hand the gateway URLs (attachments to fetch, webhooks to post to). Left open, that
lets them aim it at cloud metadata endpoints, the machine's loopback admin ports or the LAN (server-side
request forgery), so such requests go only to public unicast addresses.
"""

from __future__ import annotations

import ipaddress

__all__ = ["check_public_url", "is_public_address"]


def is_public_address(address: str) -> bool:
    """A global unicast address (an IPv4-mapped IPv6 address is judged as the IPv4 one it carries)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


async def check_public_url(url: str) -> None:
    """Refuse (``InvalidRequest`` naming ``url``) a URL that is not http(s) or whose host resolves to any
    address that is not public."""
    import asyncio
    import socket
    from urllib.parse import urlsplit

    from gateway.protocol import InvalidRequest

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidRequest(f"url: not an http(s) URL: {url}", details={"field": "url"})
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(
            parts.hostname, parts.port or (443 if parts.scheme == "https" else 80), type=socket.SOCK_STREAM)
    except OSError as exc:
        raise InvalidRequest(f"url: cannot resolve {parts.hostname}: {exc}", details={"field": "url"}) from None
    if not all(is_public_address(str(info[4][0])) for info in infos):
        raise InvalidRequest(f"url: {parts.hostname} is a private or reserved address; not fetching it",
                             details={"field": "url"})
