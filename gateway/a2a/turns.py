"""The SDK's agent executor: an A2A message becomes a turn of the gateway's, and the turn's events its task.

A message goes into the peer's session for its ``contextId`` (``tasks.session_key_for``) through ``chat.send``
(its text, data parts as JSON and files with their bytes as attachments: ``gateway.a2a.files``),
called in process as the peer (``CapabilityHost.call``): the web chat's path, with its checks (the session is the
peer's own, the agent is open to them), its tier (the owner's only for the owner), its run queue and executor.
A tap on the session's events (``CapabilityHost.tap_session``), opened before the turn starts, becomes the task:

=============================================  ========================================================
``chat`` deltas of the run                     one artifact ``reply``, appended chunk by chunk (the live reply)
an approval or question raised in the session  ``input-required`` (with what is asked), ``working`` once decided
a file the agent sends to the conversation     an artifact with the file (its name, type and gateway URL)
the run's end                                  ``completed`` (the reply as the status message), ``failed``,
                                               ``canceled``
=============================================  ========================================================

``cancel`` stops the run (``chat.abort`` as the peer). A message answering a pending question goes in the same way
and is taken by the approvals' chat decisions, as on the web chat.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import structlog
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.tasks.task_updater import TaskUpdater
from a2a.types.a2a_pb2 import Message, Part, Role, Task, TaskState, TaskStatus

from gateway.a2a.files import drop_file_bytes, turn_input
from gateway.a2a.tasks import peer_of, session_key_for
from gateway.protocol import RpcError

if TYPE_CHECKING:
    from a2a.server.events.event_queue_v2 import EventQueue

    from gateway.composition.hosts import CapabilityHost

__all__ = ["GatewayExecutor"]

log = structlog.get_logger("gateway.a2a")

ASKING = ("exec.approval.requested", "question.requested")
DECIDED = ("exec.approval.resolved", "question.resolved")
ENDED = ("final", "error", "aborted")
REPLY_ARTIFACT = "reply"


def _agent_message(text: str, task_id: str, context_id: str) -> Message:
    return Message(message_id=uuid.uuid4().hex, role=Role.ROLE_AGENT, parts=[Part(text=text)], task_id=task_id,
                   context_id=context_id)


def _asked(event: str, payload: dict[str, Any]) -> str:
    """What the person is asked, in one line for the peer."""
    if event.startswith("exec.approval"):
        command = (payload.get("presentation") or {}).get("commandText") or "a tool"
        return f"waiting for approval: {command}"
    questions = payload.get("questions") or []
    asked = "; ".join(str(q.get("question") or q.get("header") or "") for q in questions if isinstance(q, dict))
    return f"waiting for an answer: {asked or 'a question'}"


def _file_parts(payload: dict[str, Any], base: str) -> list[Part]:
    message = payload.get("message") or {}
    parts = []
    for a in message.get("attachments") or []:
        if not isinstance(a, dict) or not a.get("url"):
            continue
        url = str(a["url"])
        parts.append(Part(url=url if url.startswith(("http://", "https://")) else base + url,
                          filename=str(a.get("name") or "file"),
                          media_type=str(a.get("mimeType") or "application/octet-stream")))
    return parts


class GatewayExecutor(AgentExecutor):
    """Runs each A2A message as a gateway turn (see the module docstring)."""

    def __init__(self, host: CapabilityHost, base_url: Any) -> None:
        self._host = host
        self._base_url = base_url
        """``() -> str``: where the gateway is reached (file artifacts' URLs)."""
        self._runs: dict[str, tuple[str, str]] = {}
        """Task id -> (session key, run id) while its turn runs: what ``cancel`` stops."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        peer = peer_of(context.call_context)
        task_id, context_id = context.task_id or uuid.uuid4().hex, context.context_id or uuid.uuid4().hex
        key = session_key_for(peer.agent_id, peer.principal.person_id, context_id)
        updater = TaskUpdater(event_queue, task_id, context_id)
        with self._host.tap_session(key) as tap:
            try:
                text, files = turn_input(context.message)
                params: dict[str, Any] = {"sessionKey": key, "message": text,
                                          "idempotencyKey": f"a2a-{task_id}-{uuid.uuid4().hex[:8]}"}
                if files:
                    params["attachments"] = files
                sent = await self._host.call("chat.send", params, peer.caller)
            except RpcError as exc:
                await self._first(event_queue, context, task_id, context_id)
                await updater.failed(_agent_message(f"refused: {exc.message}", task_id, context_id))
                return
            await self._first(event_queue, context, task_id, context_id)
            if sent.get("status") == "decided":  # an answer to a pending question, taken by the approvals
                await updater.complete(_agent_message(sent.get("notice") or "taken", task_id, context_id))
                return
            run_id = str(sent["runId"])
            self._runs[task_id] = (key, run_id)
            try:
                await updater.update_status(TaskState.TASK_STATE_WORKING, metadata={"runId": run_id})
                await self._follow(tap, run_id, updater, task_id, context_id)
            finally:
                self._runs.pop(task_id, None)

    async def _first(self, queue: EventQueue, context: RequestContext, task_id: str, context_id: str) -> None:
        """The task itself, once its session exists (so its first stored row is decided as that session)."""
        if context.current_task is not None:
            return
        history = []
        if context.message is not None:  # without its files' bytes: the agent has them, the peer sent them
            message = Message()
            message.CopyFrom(context.message)
            drop_file_bytes(message)
            history.append(message)
        await queue.enqueue_event(Task(id=task_id, context_id=context_id,
                                       status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED), history=history))

    async def _follow(self, tap: Any, run_id: str, updater: TaskUpdater, task_id: str, context_id: str) -> None:
        """The run's events, as task events, until it ends."""
        chunks = 0
        asking: set[str] = set()
        while True:
            event, payload = await tap.get()
            if not isinstance(payload, dict):
                continue
            if event == "chat":
                if payload.get("runId") != run_id:
                    if str(payload.get("runId", "")).startswith("msg-"):  # a file (or message) the agent sent
                        parts = _file_parts(payload, self._base_url())
                        if parts:
                            await updater.add_artifact(parts, name="file")
                    continue
                state = payload.get("state")
                if state == "delta":
                    replace = bool(payload.get("replace"))  # the text so far was rewritten: sent whole
                    piece = str(((payload.get("message") or {}).get("text")) if replace else
                                payload.get("deltaText") or "")
                    if piece:
                        await updater.add_artifact([Part(text=piece)], artifact_id=f"{task_id}-reply",
                                                   name=REPLY_ARTIFACT, append=chunks > 0 and not replace,
                                                   last_chunk=False)
                        chunks += 1
                    continue
                if state in ENDED:
                    await self._end(updater, payload, state, task_id, context_id, chunks)
                    return
            elif event in ASKING:
                ident = str(payload.get("id") or "")
                asking.add(ident)
                await updater.requires_input(_agent_message(_asked(event, payload), task_id, context_id))
            elif event in DECIDED:
                ident = str(payload.get("id") or "")
                if ident in asking:
                    asking.discard(ident)
                    if not asking:
                        await updater.start_work()

    async def _end(self, updater: TaskUpdater, payload: dict[str, Any], state: str, task_id: str, context_id: str,
                   chunks: int) -> None:
        text = str((payload.get("message") or {}).get("text") or "")
        if state == "final":
            if text:  # the whole reply as the artifact's last chunk (replacing the pieces), and as the message
                await updater.add_artifact([Part(text=text)], artifact_id=f"{task_id}-reply", name=REPLY_ARTIFACT,
                                           append=False, last_chunk=True)
            await updater.complete(_agent_message(text, task_id, context_id))
        elif state == "aborted":
            await updater.cancel(_agent_message(payload.get("errorMessage") or "the run was stopped", task_id,
                                                context_id))
        else:
            await updater.failed(_agent_message(payload.get("errorMessage") or "the run failed", task_id,
                                                context_id))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Stop the task's run (``chat.abort`` as the peer), and say the task is canceled."""
        peer = peer_of(context.call_context)
        task_id = context.task_id or ""
        running = self._runs.pop(task_id, None)
        if running is not None:
            key, run_id = running
            try:
                await self._host.call("chat.abort", {"sessionKey": key, "runId": run_id}, peer.caller)
            except RpcError as exc:
                log.warning("a2a cancel: the run was not stopped", task=task_id, error=exc.message)
        updater = TaskUpdater(event_queue, task_id, context.context_id or "")
        await updater.cancel(_agent_message("canceled by the caller", task_id, context.context_id or ""))
