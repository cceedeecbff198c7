"""Fetching a URL that a caller (often an agent) gave us, without letting it reach private networks.

``message.sendAttachment`` with an http(s) URL makes the gateway download the file on some channels.
Left open, that lets a chat user steer the gateway at cloud metadata endpoints, the loopback admin
ports of the machine, or the LAN (server-side request forgery). So: only public unicast addresses,
checked on every address the name resolves to at connect time (a resolver that filters, so DNS
rebinding cannot swap in a private address after the check), no redirects, and a size cap.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from typing import Any

import aiohttp
import yarl

from gateway.platforms import is_public_address

__all__ = ["FetchRefused", "fetch_public"]


class FetchRefused(Exception):
    """The URL points somewhere we do not fetch from, or did not answer with a file."""


class _PublicResolver(aiohttp.ThreadedResolver):
    async def resolve(self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET) -> list[Any]:
        found = await super().resolve(host, port, family)
        allowed = [r for r in found if is_public_address(r["host"])]
        if not allowed:
            raise OSError(f"{host} resolves only to private or reserved addresses")
        return allowed


async def fetch_public(url: str, *, max_bytes: int, timeout_s: float = 60.0) -> tuple[str, bytes]:
    """Download ``url`` (http or https, public hosts only); returns (file name, body).

    Raises:
        FetchRefused: with a message a person can act on (private address, HTTP status, too large).
    """
    parsed = yarl.URL(url)
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise FetchRefused(f"only http(s) URLs can be fetched: {url}")
    host = parsed.host.strip("[]")
    try:
        literal = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if literal is not None and not is_public_address(host):
        raise FetchRefused(f"refusing to fetch from a private or reserved address: {host}")
    if literal is None:
        # Checked here for a clear message; the resolver below checks again at connect time.
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, parsed.port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise FetchRefused(f"cannot resolve {host}: {exc}") from exc
        if not any(is_public_address(str(info[4][0])) for info in infos):
            raise FetchRefused(f"refusing to fetch from a private or reserved address: {host}")
    connector = aiohttp.TCPConnector(resolver=_PublicResolver())
    try:
        async with aiohttp.ClientSession(connector=connector) as http, http.get(
            url, allow_redirects=False, timeout=aiohttp.ClientTimeout(total=timeout_s)
        ) as resp:
            if resp.status != 200:
                raise FetchRefused(f"{url} answered HTTP {resp.status} (redirects are not followed)")
            data = await resp.content.read(max_bytes + 1)
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        raise FetchRefused(f"cannot fetch {url}: {exc}") from exc
    if len(data) > max_bytes:
        raise FetchRefused(f"{url} is over the {max_bytes // (1024 * 1024)} MiB limit")
    return parsed.name or "file", data
