"""``a2a.send``: a message to a configured A2A peer (``a2a.peers[]``), for the shim's ``a2a_send`` tool.

Owner only (``agent exec``): the gateway calls another agent with a credential of the owner's (the peer's secret
in config), and what comes back is the peer's words. The gateway streams the peer's reply (``SendStreamingMessage``
when the peer's card says it streams) and answers with the whole of it, the task's id, state and ``contextId`` (to
continue the conversation) and the artifacts' files.

Called by an agent run (the shim's ``a2a_send``: the caller's ``run_session``), the peer's words also stream into
that run's live reply as they come: a block of their own (``<peer> (A2A): …``) after the run's text so far, in its
``chat`` deltas and its live note on the chat (``Run.aside``). The run's final answer stays the CLI's own.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from pydantic import Field

from gateway.access import Access
from gateway.dispatch.dispatcher import WRITE, CallContext, Params, method
from gateway.protocol import InvalidRequest

__all__ = ["SendParams"]


class SendParams(Params):
    peer: str = Field(min_length=1, max_length=64, description="A peer's name in a2a.peers[].")
    message: str = Field(min_length=1, max_length=100_000)
    contextId: str | None = Field(None, min_length=1, max_length=128, description="Continue this conversation.")
    timeoutMs: int = Field(300_000, ge=1000, le=3_600_000)


@method("a2a.send", access=Access("agent", "exec"), params=SendParams, scope=WRITE)
async def a2a_send(p: SendParams, ctx: CallContext) -> dict[str, Any]:
    """Send ``message`` to the peer ``peer`` and wait for its reply (streamed while it comes)."""
    peers = {peer.name: peer for peer in ctx.config.a2a.peers}
    peer = peers.get(p.peer)
    if peer is None:
        known = ", ".join(sorted(peers)) or "none configured (a2a.peers)"
        raise InvalidRequest(f"peer: no A2A peer '{p.peer}' (known: {known})", details={"field": "peer"})
    from gateway.a2a.client import send
    from gateway.extras import require

    require("a2a", "calling an A2A peer")
    return await send(peer.url, p.message, credential=peer.credential, context_id=p.contextId,
                      timeout_s=p.timeoutMs / 1000, on_text=_live_reply(ctx, peer.name))


def _live_reply(ctx: CallContext, peer: str) -> Callable[[str], None] | None:
    """What shows the peer's words in the calling run's live reply as they stream, if a run is calling and runs
    here (a call from elsewhere, or a run on another replica, streams nowhere: it gets the whole answer)."""
    session = ctx.caller.run_session
    run = ctx.runs.running(session) if session else None
    if run is None or run.aside is None:
        return None
    key, said = f"a2a-{uuid.uuid4().hex[:8]}", [""]

    def show(piece: str) -> None:
        said[0] += piece
        if run.aside is not None:  # the run may end before the peer does
            run.aside(key, f"{peer} (A2A): {said[0]}")

    return show
