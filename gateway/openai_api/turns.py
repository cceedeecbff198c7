"""One API request's turn: sent into its session the way the web chat sends one, and followed until it ends.

The turn is started with ``chat.send``, called in process as the request's caller: the same method the web chat
page calls, so the dispatcher and the access model decide it (the session named must be one the caller may
write; a person's must be in their own name space and on an agent open to them), the message is stored, the run
queued (one turn per session, a message arriving meanwhile joins the next turn) and run like any other. What the
turn says while it runs is read from a tap on the session's events (``gateway.composition.event_taps``), opened
before the turn starts; its end from the run queue (``RunQueue.wait``), which is what ``agent.wait`` answers.

An approval or question the turn raises goes where every turn's goes (the session's chat, the person's pages);
the request only notices it, and if nobody has decided it within ``api.openai.approvalWaitSeconds`` answers that
the turn waits for it. The turn itself goes on, and its answer lands in the conversation.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog
from sqlalchemy import func, select

from gateway.openai_api.errors import ApiError, from_rpc
from gateway.protocol import RpcError
from gateway.runs.chat_methods import as_upload
from gateway.usage.store import TurnUsage

log = structlog.get_logger("gateway.openai_api")

if TYPE_CHECKING:
    from gateway.composition.event_taps import EventTap
    from gateway.dispatch.callers import Caller
    from gateway.openai_api.wire import File
    from gateway.runs import RunQueue
    from gateway.store import Database

__all__ = ["Delta", "Done", "Started", "TurnRunner", "Usage"]

Call = Callable[..., Awaitable[Any]]
"""``(method, params, caller, *, request_id)``: a gateway method in process (``CapabilityHost.call``)."""

CHAT_SEND_FIELDS = {"sessionKey": "model", "message": "messages", "attachments": "messages",
                    "idempotencyKey": "Idempotency-Key"}
"""``chat.send``'s params named by an error, as the request's fields."""

WAITING_EVENTS = frozenset({"exec.approval.requested", "question.requested"})


@dataclass(frozen=True, slots=True)
class Started:
    run_id: str
    session_key: str
    notice: str | None = None
    """The message decided a pending approval or question instead of starting a turn: what the chat was told."""


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True, slots=True)
class Delta:
    text: str


@dataclass(frozen=True, slots=True)
class Done:
    reply: str
    usage: Usage


def _waiting_on(event: str, payload: dict[str, Any]) -> str:
    if event == "question.requested":
        questions = payload.get("questions") or []
        first = questions[0].get("question") if questions and isinstance(questions[0], dict) else None
        return f"a question ({payload.get('id')}: {first or 'see the chat'})"
    shown = payload.get("presentation")  # OpenClaw's ApprovalSnapshot
    what = (shown.get("commandText") if isinstance(shown, dict) else None) or "a tool use"
    return f"an approval ({payload.get('id')}: {str(what)[:200]})"


class TurnRunner:
    """Starts and follows API turns for one gateway start."""

    def __init__(self, call: Call, tap: Callable[[str], EventTap], runs: RunQueue, db: Database) -> None:
        self._call = call
        self.tap = tap
        self._runs = runs
        self._db = db

    async def start(self, caller: Caller, session_key: str, text: str, idempotency_key: str,
                    files: Sequence[File] = ()) -> Started:
        """Send ``text`` and ``files`` into ``session_key`` as ``caller`` (``chat.send``; the files as its
        ``attachments``, the web chat's uploads: the agent finds them in its workspace).

        Raises:
            ApiError: the method's refusal, naming the request's field.
        """
        params: dict[str, Any] = {"sessionKey": session_key, "message": text, "idempotencyKey": idempotency_key}
        if files:
            params["attachments"] = [as_upload(f.name, f.mime_type, f.data) for f in files]
        try:
            sent = await self._call("chat.send", params, caller, request_id=f"openai-{idempotency_key}")
        except RpcError as exc:
            raise from_rpc(exc, CHAT_SEND_FIELDS) from None
        if sent.get("status") == "decided":
            return Started(str(sent["runId"]), session_key, notice=str(sent.get("notice") or ""))
        return Started(str(sent["runId"]), str(sent["sessionKey"]))

    async def stop(self, caller: Caller, started: Started) -> None:
        """Stop the turn (``chat.abort`` as its caller: the access model decides, as for any stop)."""
        try:
            await self._call("chat.abort", {"sessionKey": started.session_key, "runId": started.run_id}, caller,
                             request_id=f"openai-stop-{started.run_id}")
        except RpcError as exc:
            log.info("openai: a gone client's turn could not be stopped", run_id=started.run_id, error=str(exc))

    async def follow(self, tap: EventTap, started: Started, *, wait_s: float,
                     approval_wait_s: float) -> AsyncIterator[Delta | Done]:
        """The turn's new text as it is written, then its end.

        Raises:
            ApiError: 504 when it waits for an approval past ``approval_wait_s`` or runs past ``wait_s`` (it goes
            on); 500 when it failed.
        """
        if started.notice is not None:
            yield Done(started.notice, Usage())
            return
        run_id = started.run_id
        loop = asyncio.get_running_loop()
        ended: asyncio.Future[Any] = asyncio.ensure_future(self._runs.wait(run_id, int(wait_s * 1000)))
        heard: asyncio.Future[Any] = asyncio.ensure_future(tap.get())
        streamed = ""
        waiting: tuple[str, str, float] | None = None  # (request id, what, until)
        try:
            while True:
                timeout = None if waiting is None else max(0.0, waiting[2] - loop.time())
                finished, _ = await asyncio.wait({ended, heard}, timeout=timeout,
                                                 return_when=asyncio.FIRST_COMPLETED)
                if not finished:
                    raise _waiting_error(waiting[1] if waiting else "an approval")
                while heard.done():
                    event, payload = heard.result()
                    heard = asyncio.ensure_future(tap.get())
                    if not isinstance(payload, dict):
                        continue
                    if event in WAITING_EVENTS:
                        waiting = (str(payload.get("id")), _waiting_on(event, payload), loop.time() + approval_wait_s)
                    elif event == "exec.approval.resolved" and waiting and payload.get("id") == waiting[0]:
                        waiting = None
                    elif payload.get("runId") == run_id and event in ("chat", "agent"):
                        waiting = None  # the turn moves again: whatever it waited for was decided
                        text = (payload.get("message") or {}).get("text") if event == "chat" else None
                        if payload.get("state") == "delta" and isinstance(text, str) and text.startswith(streamed) \
                                and len(text) > len(streamed):
                            yield Delta(text[len(streamed):])
                            streamed = text
                    await asyncio.sleep(0)  # let a tap that already holds the next event settle it
                if ended.done():
                    result = ended.result()
                    break
            status = result.get("status")
            if status == "timeout":
                raise _waiting_error(waiting[1]) if waiting else ApiError(
                    504, f"The turn is still running after {wait_s:g} s (api.openai.waitSeconds); it goes on, "
                         "and its answer will be in the conversation.", type="timeout", code="turn_timeout",
                    retry=False)
            if status != "ok":
                raise ApiError(500, f"The agent's turn failed: {result.get('error') or status}",
                               type="server_error", code="turn_failed", retry=False)
            reply = str(result.get("reply") or "")
            if reply.startswith(streamed) and len(reply) > len(streamed):
                yield Delta(reply[len(streamed):])
            yield Done(reply, await self.usage(run_id))
        finally:
            for pending in (ended, heard):
                if not pending.done():
                    pending.cancel()
                    with contextlib.suppress(BaseException):
                        await pending

    async def usage(self, run_id: str) -> Usage:
        """What the turn's model calls counted (``turn_usage``), as OpenAI's usage reports it."""
        async with self._db.reading() as s:
            row = (await s.execute(select(func.coalesce(func.sum(TurnUsage.input_tokens), 0),
                                          func.coalesce(func.sum(TurnUsage.output_tokens), 0),
                                          func.coalesce(func.sum(TurnUsage.cache_read_tokens), 0))
                                   .where(TurnUsage.run_id == run_id))).one()
        return Usage(int(row[0]) + int(row[2]), int(row[1]), int(row[2]))


def _waiting_error(what: str) -> ApiError:
    return ApiError(504, f"The turn is waiting for {what} from the person whose conversation this is; they decide "
                         "it on their chat or the web chat. The turn goes on once decided, and its answer will be in "
                         "the conversation.", type="timeout", code="approval_pending", retry=False)


def now_s() -> int:
    return int(time.time())
