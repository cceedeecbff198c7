"""Where a cron run's result goes: a chat (``announce``), a webhook, or nowhere.

Nothing is sent twice: when the run's own tools already sent a message (its side effects say so), or
a heartbeat's ``heartbeat_report`` says nothing was done, the announcement is skipped.

Webhooks are posted without letting a job aim the gateway at private networks (cloud metadata, the
machine's loopback admin ports, the LAN): the host is resolved once, every address must be public
(unless ``cron.webhookAllowPrivate``), and the connection goes to that checked address (TLS still
verifies the name), so DNS cannot swap in another address after the check. No redirects are followed.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import orjson
import structlog

from gateway.netguard import is_public_address
from gateway.runs import Origin

if TYPE_CHECKING:
    from gateway.platforms.interface import ChatPlatforms
    from gateway.sessions.service import SessionsService
    from gateway.store import Database

__all__ = ["WebhookRefused", "announce", "post_webhook", "skip_reason"]

log = structlog.get_logger("gateway.cron")

WEBHOOK_TIMEOUT_S = 15.0


class WebhookRefused(Exception):
    """The webhook URL points somewhere we do not post to, or the server did not take the post."""


def skip_reason(side_effects: list[dict[str, Any]]) -> str | None:
    """Why an announcement would repeat or be noise, from the run's side effects; None to send it."""
    if any(fx.get("type") == "message_sent" for fx in side_effects):
        return "skipped:already-sent"
    reports = [fx for fx in side_effects if fx.get("type") == "heartbeat_report"]
    if reports and not reports[-1].get("anythingDone"):
        return "skipped:nothing-done"
    return None


async def announce(db: Database, sessions: SessionsService, platforms: ChatPlatforms | None, delivery: dict[str, Any],
                   text: str, session_key: str, agent_id: str) -> str:
    """Send ``text`` to the delivery's chat, or to the last chat the session (or the agent's main
    session) was used from; returns the delivery status."""
    from gateway.sessions.store import SessionRepo

    if not text.strip():
        return "skipped:empty"
    origin: Origin | None = None
    if delivery.get("channel") and delivery.get("to"):
        origin = Origin(channel=delivery["channel"], account_id=delivery.get("accountId"), to=delivery["to"],
                        chat_type="dm", thread_id=delivery.get("threadId"))
    else:
        async with db.session() as s:
            for key in (session_key, f"agent:{agent_id}:main"):
                row = await SessionRepo.get(s, key)
                if row is not None and row.channel and row.peer_id and row.channel != "webchat":
                    origin = Origin(channel=row.channel, account_id=row.account_id, to=row.peer_id,
                                    chat_type=row.chat_type or "dm", thread_id=row.thread_id)
                    break
    if origin is None:
        # No chat to send to: the web chat shows it (the transcript keeps it).
        await sessions.ensure(session_key)
        async with db.session() as s:
            await SessionRepo.add_entry(s, session_key, "assistant", text, run_id=None)
        return "transcript"
    if platforms is None:
        raise RuntimeError("no chat platforms run on this gateway")
    await platforms.deliver(origin, text, session_key)
    return "delivered"


async def post_webhook(url: str, body: dict[str, Any], *, token: str | None = None,
                       allow_private: bool = False, timeout_s: float = WEBHOOK_TIMEOUT_S) -> int:
    """POST ``body`` as JSON; returns the HTTP status (2xx) or raises ``WebhookRefused``."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise WebhookRefused(f"not an http(s) URL: {url}")
    host = parts.hostname
    port = parts.port or (443 if parts.scheme == "https" else 80)
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise WebhookRefused(f"cannot resolve {host}: {exc}") from exc
    addresses = [str(info[4][0]) for info in infos]
    if not allow_private and not all(is_public_address(a) for a in addresses):
        raise WebhookRefused(f"{host} resolves to a private or reserved address; not posting there "
                             "(cron.webhookAllowPrivate allows it)")
    payload = orjson.dumps(body)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    headers = [f"POST {path} HTTP/1.1", f"Host: {parts.netloc.rsplit('@', 1)[-1]}",
               "Content-Type: application/json", f"Content-Length: {len(payload)}", "Connection: close",
               "User-Agent: remoteclaw-cron"]
    if token:
        headers.append(f"Authorization: Bearer {token}")
    request = ("\r\n".join(headers) + "\r\n\r\n").encode() + payload
    tls = ssl.create_default_context() if parts.scheme == "https" else None
    try:
        async with asyncio.timeout(timeout_s):
            reader, writer = await asyncio.open_connection(
                addresses[0], port, ssl=tls, server_hostname=host if tls else None)
            try:
                writer.write(request)
                await writer.drain()
                status_line = await reader.readline()
            finally:
                writer.close()
    except (OSError, TimeoutError, ssl.SSLError) as exc:
        raise WebhookRefused(f"POST {url} failed: {exc or type(exc).__name__}") from exc
    try:
        status = int(status_line.split()[1])
    except (IndexError, ValueError) as exc:
        raise WebhookRefused(f"POST {url}: not an HTTP answer") from exc
    if not 200 <= status < 300:
        raise WebhookRefused(f"POST {url} answered {status}")
    return status
