"""``agent.request``: a node asks the gateway to give an agent a message (OpenClaw's node event name).

The canvas sends one when the user presses an A2UI button: the message describes the action and its
resolved context, and ``sessionKey`` names the session that pushed the surface, so the agent that drew
the UI hears what was done with it. Its answer goes where that session's conversation is (the chat's last
route) when ``deliver`` is set, as any channel turn's would. Nodes are paired by the owner and canvas
tools are owner-only, so the turn runs at the owner's tier.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog

from gateway.runs.run import Origin, RunRequest
from gateway.sessions.service import main_key

if TYPE_CHECKING:
    from gateway.devices.service import EventHandler
    from gateway.runs import RunQueue
    from gateway.sessions.service import SessionsService

__all__ = ["MAX_MESSAGE_CHARS", "agent_request", "agent_requests"]

log = structlog.get_logger("gateway.devices")

MAX_MESSAGE_CHARS = 20_000


def agent_requests(sessions: SessionsService, runs: RunQueue) -> EventHandler:
    """The handler of ``agent.request`` node events: each starts (or queues) a turn in the session it names."""

    async def handle(node_id: str, payload: Any) -> None:
        await agent_request(sessions, runs, node_id, payload)

    return handle


async def agent_request(sessions: SessionsService, runs: RunQueue, node_id: str, payload: Any) -> None:
    """Start (or queue) a turn for the message a node sent; a malformed request is logged and dropped."""
    if not isinstance(payload, dict):
        log.warning("agent.request without an object payload", node=node_id)
        return
    message = payload.get("message")
    if not isinstance(message, str) or not message.strip() or len(message) > MAX_MESSAGE_CHARS:
        log.warning("agent.request with no usable message", node=node_id)
        return
    raw_key = payload.get("sessionKey")
    try:
        key = sessions.normalize_key(raw_key) if isinstance(raw_key, str) and raw_key.strip() \
            else main_key(sessions.default_agent_id)
    except Exception as exc:  # an agent that no longer exists
        log.warning("agent.request for an unknown session", node=node_id, session=raw_key, error=str(exc))
        return
    await sessions.ensure(key)
    origin = None
    if payload.get("deliver"):
        row = await sessions.get(key)
        if row is not None and row.channel and row.peer_id:
            origin = Origin(channel=row.channel, account_id=row.account_id, to=row.peer_id,
                            chat_type=row.chat_type or "dm", thread_id=row.thread_id)
    run, status = await runs.submit(RunRequest(
        session_key=key, agent_id=key.split(":", 2)[1], message=message.strip(), source="node", is_owner=True,
        origin=origin, deliver=origin is not None))
    log.info("node agent request", node=node_id, session=key, run=run.id, status=status)
