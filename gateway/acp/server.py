"""The ACP agent an editor talks to, backed by gateway sessions over the gateway's WebSocket.

Each ACP session is a gateway session (its key is the ACP ``sessionId``). A prompt is a ``chat.send`` turn; its
``chat`` deltas become ``agent_message_chunk``s, its ``agent`` tool events ``tool_call``/``tool_call_update``s
with their status, a plan the runtime reports (``Plan:`` thinking, see ``acp_turn``) a ``plan`` update, other
thinking ``agent_thought_chunk``s; the final ``chat`` event ends the prompt. The run's approval requests
(``exec.approval.requested``) and ``ask_user`` questions (``question.requested``) are put to the editor as
``session/request_permission`` while they stay in the chat too: whichever answer reaches the gateway first decides,
the other is refused there and ignored here. ``session/cancel`` is ``chat.abort``; ``session/load`` replays
``chat.history``; ``session/list`` is ``sessions.list``.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import Any

import structlog
from acp import (
    PROTOCOL_VERSION,
    RequestError,
    start_tool_call,
    text_block,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
    update_user_message_text,
)
from acp.schema import (
    AgentCapabilities,
    AllowedOutcome,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PermissionOption,
    PlanEntry,
    PromptCapabilities,
    PromptResponse,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
    ToolCallUpdate,
)

from gateway.acp.events import RunEvents, plan_entries, tool_kind
from mcp_shim.client import GatewayClient

__all__ = ["GatewayAgent"]

log = structlog.get_logger(__name__)

SCOPES = ("operator.admin", "operator.read", "operator.write", "operator.approvals")
_DECISIONS = {"allow-once": "allow_once", "allow-always": "allow_always", "deny": "reject_once"}
_OPTIONS = [PermissionOption(option_id="allow-once", name="Allow once", kind="allow_once"),
            PermissionOption(option_id="allow-always", name="Allow always", kind="allow_always"),
            PermissionOption(option_id="deny", name="Deny", kind="reject_once")]


class GatewayAgent:
    """The agent side of ``remoteclaw acp`` (one per editor connection)."""

    def __init__(self, url: str, token: str | None, *, session_key: str | None = None, agent_id: str = "main",
                 client: GatewayClient | None = None) -> None:
        self.url, self.token = url, token
        self.session_key = session_key
        self.agent_id = agent_id
        self.editor: Any = None
        self.gateway = client or GatewayClient(url, token, client_id="cli", mode="cli", scopes=SCOPES,
                                               on_event=self._on_event)
        self._connected = False
        self._runs: dict[str, RunEvents] = {}
        """Running prompts by gateway run id: the events of each are routed to it."""
        self._asked: set[str] = set()

    def on_connect(self, conn: Any) -> None:
        self.editor = conn

    async def _gw(self) -> GatewayClient:
        if not self._connected:
            await self.gateway.connect()
            self._connected = True
        return self.gateway

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        gw = await self._gw()
        return await gw.request(method, params)

    # -- ACP agent methods ----------------------------------------------------------------------------------

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None,
                         **kwargs: Any) -> InitializeResponse:
        await self._gw()  # a wrong URL or token fails here, where the editor shows it
        caps = AgentCapabilities(load_session=True, prompt_capabilities=PromptCapabilities(),
                                 session_capabilities=SessionCapabilities(list=SessionListCapabilities()))
        return InitializeResponse(protocol_version=min(protocol_version, PROTOCOL_VERSION), agent_capabilities=caps,
                                  agent_info=Implementation(name="remoteclaw", title="remoteclaw gateway",
                                                            version="0.1.0"))

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> NewSessionResponse:
        """A new gateway session (``agent:<agent>:acp:<id>``), or the one ``--session`` names."""
        key = self.session_key or f"agent:{self.agent_id}:acp:{uuid.uuid4().hex[:12]}"
        return NewSessionResponse(session_id=key)

    async def load_session(self, cwd: str, session_id: str, mcp_servers: Any = None,
                           **kwargs: Any) -> LoadSessionResponse:
        """Replay the session's transcript to the editor."""
        history = await self.call("chat.history", {"sessionKey": session_id})
        for i, m in enumerate(history.get("messages") or []):
            role, text = m.get("role"), str(m.get("text") or "")
            if role == "user":
                await self.editor.session_update(session_id, update_user_message_text(text))
            elif role == "assistant":
                await self.editor.session_update(session_id, update_agent_message_text(text))
            elif role == "tool" and isinstance(m.get("tool"), dict):
                tool = m["tool"]
                tid = f"history-{i}"
                await self.editor.session_update(session_id, start_tool_call(
                    tid, str(tool.get("name") or "tool"), kind=tool_kind(tool.get("name")),
                    status="failed" if tool.get("isError") else "completed", raw_input=tool.get("input"),
                    raw_output=tool.get("output")))
        return LoadSessionResponse()

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None,
                            **kwargs: Any) -> ListSessionsResponse:
        listed = await self.call("sessions.list", {})
        out = []
        for s in listed.get("sessions") or []:
            key = s.get("key")
            if isinstance(key, str):
                title = s.get("label") or s.get("displayName") or s.get("derivedTitle")
                out.append(SessionInfo(session_id=key, cwd=cwd or "/", title=title if isinstance(title, str) else None))
        return ListSessionsResponse(sessions=out)

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        text = "\n".join(str(getattr(b, "text", "") or "") for b in prompt if getattr(b, "type", None) == "text")
        if not text.strip():
            raise RequestError.invalid_params({"prompt": "no text in the prompt"})
        run_id = f"acp-{uuid.uuid4().hex}"  # chat.send runs the turn under its idempotency key
        run = RunEvents(run_id, session_id)
        self._runs[run_id] = run
        try:
            sent = await self.call("chat.send", {"sessionKey": session_id, "message": text,
                                                 "idempotencyKey": run_id})
            if sent.get("status") == "decided":  # the text answered a pending question or approval
                return PromptResponse(stop_reason="end_turn")
            if sent.get("runId") != run_id:
                run.run_id = str(sent.get("runId"))
                self._runs[run.run_id] = run
            return await self._stream(session_id, run)
        finally:
            self._runs.pop(run_id, None)
            self._runs.pop(run.run_id, None)

    async def _stream(self, session_id: str, run: RunEvents) -> PromptResponse:
        """Forward the run's events to the editor until its final ``chat`` event."""
        while True:
            kind, payload = await run.queue.get()
            if kind == "chat":
                state = payload.get("state")
                if state == "delta":
                    piece = run.delta(payload)
                    if piece:
                        await self.editor.session_update(session_id, update_agent_message_text(piece))
                    continue
                rest = run.rest(payload)
                if rest and state == "final":
                    await self.editor.session_update(session_id, update_agent_message_text(rest))
                if state == "error" and payload.get("errorMessage"):
                    await self.editor.session_update(session_id, update_agent_message_text(
                        f"\n\n⚠️ {payload['errorMessage']}"))
                return PromptResponse(stop_reason="cancelled" if state == "aborted" else "end_turn")
            data = payload.get("data") or {}
            stream = payload.get("stream")
            if stream == "tool" and data.get("phase") == "start":
                name = str(data.get("name") or "tool")
                await self.editor.session_update(session_id, start_tool_call(
                    str(data.get("id")), name, kind=tool_kind(name), status="in_progress",
                    raw_input=data.get("input")))
            elif stream == "tool" and data.get("phase") == "result":
                output = data.get("output")
                await self.editor.session_update(session_id, update_tool_call(
                    str(data.get("id")), status="failed" if data.get("isError") else "completed",
                    raw_output=output, content=None if output is None else [
                        _tool_text(output if isinstance(output, str) else str(output))]))
            elif stream == "thinking":
                thought = str(data.get("text") or "")
                entries = plan_entries(thought)
                if entries:
                    await self.editor.session_update(session_id, update_plan(
                        [PlanEntry(content=c, status=s, priority="medium") for c, s in entries]))
                elif thought:
                    await self.editor.session_update(session_id, update_agent_thought_text(thought))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        with contextlib.suppress(Exception):
            await self.call("chat.abort", {"sessionKey": session_id})

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        return None

    async def set_session_mode(self, mode_id: str, session_id: str, **kwargs: Any) -> None:
        return None

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    # -- gateway events -------------------------------------------------------------------------------------

    def _on_event(self, event: str, payload: Any) -> None:
        if not isinstance(payload, dict):
            return
        if event in ("chat", "agent"):
            run = self._runs.get(str(payload.get("runId")))
            if run is not None:
                run.queue.put_nowait((event, payload))
        elif event == "exec.approval.requested":
            self._put_to_editor(payload, self._approval)
        elif event == "question.requested":
            self._put_to_editor(payload, self._question)

    def _put_to_editor(self, payload: dict[str, Any], ask: Any) -> None:
        """A request of a session the editor has open (a prompt of ours runs in it), asked once."""
        key = payload.get("sourceSessionKey") or payload.get("sessionKey")
        rid = str(payload.get("id"))
        prompting = any(run.session_id == key for run in self._runs.values())
        if self.editor is None or not prompting or rid in self._asked or not isinstance(key, str):
            return
        self._asked.add(rid)
        task = asyncio.get_running_loop().create_task(ask(key, payload), name=f"acp-ask-{rid}")
        task.add_done_callback(lambda t: t.cancelled() or t.exception() is None or log.warning(
            "asking the editor failed", error=str(t.exception())))

    async def _approval(self, key: str, snap: dict[str, Any]) -> None:
        text = str((snap.get("presentation") or {}).get("commandText") or "a tool use")
        call = ToolCallUpdate(tool_call_id=f"approval-{snap.get('id')}", title=text, kind=tool_kind(text),
                              status="pending")
        answer = await self.editor.request_permission(options=_OPTIONS, session_id=key, tool_call=call)
        decision = answer.outcome.option_id if isinstance(answer.outcome, AllowedOutcome) else "deny"
        with contextlib.suppress(Exception):  # decided in the chat first: the gateway refuses this one
            await self.call("exec.approval.resolve", {"id": snap["id"], "decision": decision})

    async def _question(self, key: str, record: dict[str, Any]) -> None:
        answers: dict[str, list[str]] = {}
        for q in record.get("questions") or []:
            labels = [str(o.get("label")) for o in q.get("options") or [] if isinstance(o, dict)]
            options = [PermissionOption(option_id=f"opt-{i}", name=label, kind="allow_once")
                       for i, label in enumerate(labels)]
            options.append(PermissionOption(option_id="skip", name="No answer", kind="reject_once"))
            qid = str(q.get("questionId") or q.get("id"))
            call = ToolCallUpdate(tool_call_id=f"question-{record.get('id')}-{qid}",
                                  title=str(q.get("question") or q.get("header") or "A question"), kind="other",
                                  status="pending")
            answer = await self.editor.request_permission(options=options, session_id=key, tool_call=call)
            if not isinstance(answer.outcome, AllowedOutcome) or answer.outcome.option_id == "skip":
                continue
            answers[qid] = [labels[int(answer.outcome.option_id.split("-", 1)[1])]]
        if answers:
            with contextlib.suppress(Exception):
                await self.call("question.resolve", {"id": record["id"], "answers": {"answers": answers}})


def _tool_text(text: str) -> Any:
    from acp import tool_content

    return tool_content(text_block(text[:4000]))
