"""What the node's browser may do, set by the person who runs the node (never by the gateway).

``browser.json`` in the node's state dir, read at every request so an edit applies at once:

    {"evaluateEnabled": false, "allowPrivateNetwork": false, "allowedHosts": [], "downloadsDir": null}

``evaluateEnabled`` lets ``/act`` run JavaScript (``kind: evaluate`` and ``wait`` with ``fn``): off by
default, since a page script can read every cookie of the browser. ``allowPrivateNetwork`` lets the
browser open loopback, private and link-local addresses (off: a gateway-side agent could otherwise use
the node to reach its LAN); ``allowedHosts`` opens single hosts instead. Downloads land in one folder,
``downloads/`` in the state dir unless ``downloadsDir`` says otherwise.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from nodes.state import read_json, write_private

__all__ = ["BrowserSettings", "UrlRefused", "check_url"]

KEYS = ("evaluateEnabled", "allowPrivateNetwork", "allowedHosts", "downloadsDir")


class UrlRefused(ValueError):
    """A URL the node's browser will not open; the message says why and which setting would allow it."""


@dataclass(slots=True)
class BrowserSettings:
    evaluate_enabled: bool = False
    allow_private_network: bool = False
    allowed_hosts: list[str] = field(default_factory=list)
    downloads_dir: Path = Path("downloads")

    @classmethod
    def load(cls, state: Path) -> BrowserSettings:
        data = read_json(state / "browser.json")
        hosts = data.get("allowedHosts") or []
        if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
            raise ValueError(f"{state / 'browser.json'}: allowedHosts must be a list of host names")
        downloads = data.get("downloadsDir")
        return cls(evaluate_enabled=data.get("evaluateEnabled") is True,
                   allow_private_network=data.get("allowPrivateNetwork") is True,
                   allowed_hosts=[h.lower() for h in hosts],
                   downloads_dir=Path(downloads).expanduser() if isinstance(downloads, str) and downloads
                   else state / "downloads")

    @staticmethod
    def update(state: Path, key: str, value: object) -> dict[str, object]:
        """Set one key in ``browser.json`` (the CLI's ``remoteclaw node browser set``)."""
        if key not in KEYS:
            raise ValueError(f"unknown browser setting {key!r} (known: {', '.join(KEYS)})")
        data = read_json(state / "browser.json")
        data[key] = value
        write_private(state / "browser.json", data)
        return data


def _private(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return not ip.is_global or ip.is_multicast


async def check_url(url: str, settings: BrowserSettings) -> None:
    """Refuse what the browser must not open: other schemes, and private addresses unless allowed.

    A host name is resolved and refused if any of its addresses is private (a public name pointing at
    127.0.0.1 is the classic way around a name check).
    """
    if url in ("about:blank",):
        return
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise UrlRefused(f"only http and https URLs may be opened, not {parts.scheme or 'a bare path'}: {url}")
    host = (parts.hostname or "").lower()
    if not host:
        raise UrlRefused(f"the URL has no host: {url}")
    if settings.allow_private_network or host in settings.allowed_hosts:
        return
    try:
        addresses = [host] if _is_ip(host) else [
            info[4][0] for info in await asyncio.get_running_loop().getaddrinfo(
                host, parts.port or (443 if parts.scheme == "https" else 80), type=socket.SOCK_STREAM)]
    except socket.gaierror as exc:
        raise UrlRefused(f"cannot resolve {host}: {exc.strerror}") from None
    if any(_private(str(a)) for a in addresses):
        raise UrlRefused(f"{host} is a private or loopback address; the node's browser opens those only when "
                         f"its owner allows it (remoteclaw node browser set allowPrivateNetwork true, or add "
                         f"the host to allowedHosts)")


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True
