"""Which network addresses the gateway may reach on behalf of a URL someone else chose.

Agents and chat users hand the gateway URLs (attachments to fetch, webhooks to post to). Left open, that
lets them aim it at cloud metadata endpoints, the machine's loopback admin ports or the LAN (server-side
request forgery), so such requests go only to public unicast addresses.
"""

from __future__ import annotations

import ipaddress

__all__ = ["is_public_address"]


def is_public_address(address: str) -> bool:
    """A global unicast address (an IPv4-mapped IPv6 address is judged as the IPv4 one it carries)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast
