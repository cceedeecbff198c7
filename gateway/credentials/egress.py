"""The HTTPS ``CONNECT`` proxy a run without a network reaches the web through, when the owner lists hosts.

A run on ``none``/``loopback`` gets ``HTTPS_PROXY`` pointing at a port inside its sandbox that leads here
(``gateway.sandbox.portal``, through a relay socket). Each allowlist is a proxy of its own behind a socket of its
own, and a run's sandbox holds only the socket of its tier's list (the agent's ``sandbox.egress`` for the owner's
runs, ``sandbox.othersEgress`` for anyone else's, else ``modelGateway.egress.allow``): which list applies is decided
by what the operating system lets the run reach, not by anything the run says. Only ``CONNECT host:port`` is served,
for a host in that list (a name, or ``*.suffix``) on an allowed port; the name is resolved here and the tunnel goes
to the address that was checked (no second lookup a DNS answer could change), refused when any address the name
resolves to is private, loopback, link-local, multicast, reserved or a cloud metadata address, unless the owner
names that exact address in ``egress.allowAddresses``. The TLS inside the tunnel is the run's own: the gateway sees
only the host name.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import ipaddress
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING

import structlog

if TYPE_CHECKING:
    from gateway.credentials.config import EgressConfig

__all__ = ["EgressProxy", "refused_address"]

log = structlog.get_logger("gateway.credentials")

METADATA = frozenset({"169.254.169.254", "169.254.170.2", "fd00:ec2::254", "100.100.100.200", "192.0.0.192"})
"""Cloud metadata services (AWS, ECS, AWS IPv6, Alibaba, Oracle), refused whatever else is allowed."""
_CHUNK = 65_536


def refused_address(ip: str, allowed: frozenset[str] = frozenset()) -> str | None:
    """Why a run may not reach ``ip`` (None: it may)."""
    addr = ipaddress.ip_address(ip.split("%")[0])
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    if str(addr) in METADATA:
        return "a cloud metadata address"
    if str(addr) in allowed:
        return None
    for what, bad in (("loopback", addr.is_loopback), ("link-local", addr.is_link_local),
                      ("private", addr.is_private), ("multicast", addr.is_multicast),
                      ("reserved", addr.is_reserved), ("unspecified", addr.is_unspecified)):
        if bad:
            return f"a {what} address"
    return None


class EgressProxy:
    """One allowlist's proxy (``allow``); the ports and the private addresses allowed are read live."""

    def __init__(self, allow: tuple[str, ...], config: Callable[[], EgressConfig]) -> None:
        self.allow = allow
        self._config = config
        self._server: asyncio.AbstractServer | None = None
        self.address: tuple[str, int] = ("127.0.0.1", 0)
        self.refused: list[str] = []
        """What was refused, newest last (``doctor`` and tests)."""

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.address = self._server.sockets[0].getsockname()[:2]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()

    def _allowed_host(self, host: str, port: int) -> bool:
        host = host.lower().rstrip(".")
        return port in self._config().ports and any(fnmatch.fnmatchcase(host, pat) for pat in self.allow)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
            writer.close()
            return
        line = head.split(b"\r\n", 1)[0].decode("latin-1").split()
        if len(line) != 3 or line[0] != "CONNECT":
            return await self._refuse(writer, 405, "only CONNECT is served (HTTPS through the gateway's proxy)")
        host, _, port_text = line[1].rpartition(":")
        host = host.strip("[]")
        if not port_text.isdigit() or not self._allowed_host(host, int(port_text)):
            return await self._refuse(writer, 403, f"{line[1]} is not in this run's egress allowlist "
                                      "(the agent's sandbox.egress or othersEgress, else modelGateway.egress.allow)")
        port = int(port_text)
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            return await self._refuse(writer, 502, f"{host} does not resolve: {exc}")
        allowed = frozenset(self._config().allowAddresses)
        addrs = [str(info[4][0]) for info in infos]
        for ip in addrs:
            why = refused_address(ip, allowed)
            if why is not None:
                return await self._refuse(writer, 403, f"{host} resolves to {ip}, {why}")
        try:
            up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(addrs[0], port), 30)
        except (OSError, TimeoutError) as exc:
            return await self._refuse(writer, 502, f"{host}:{port} did not answer: {exc}")
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        pipes = [asyncio.create_task(_pipe(reader, up_writer)), asyncio.create_task(_pipe(up_reader, writer))]
        try:
            await asyncio.wait(pipes, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in pipes:
                task.cancel()
            for w in (writer, up_writer):
                with contextlib.suppress(Exception):
                    w.close()

    async def _refuse(self, writer: asyncio.StreamWriter, status: int, why: str) -> None:
        self.refused.append(why)
        log.info("egress refused", why=why)
        body = why.encode()
        reason = {403: "Forbidden", 405: "Method Not Allowed", 502: "Bad Gateway"}.get(status, "Error")
        with contextlib.suppress(ConnectionError, OSError):
            writer.write(f"HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain\r\ncontent-length: {len(body)}\r\n"
                         f"connection: close\r\n\r\n".encode() + body)
            await writer.drain()
        writer.close()


async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await src.read(_CHUNK):
            dst.write(data)
            await dst.drain()
