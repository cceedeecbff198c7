"""One ``runtime: acp`` turn: the agent's process, confined like any run, and the client side of its ACP conversation.

The SDK (``agent-client-protocol``) owns the wire: ``connect_to_agent`` over the process's stdin and stdout (a
``FeedTransport``: the messages the process runner reads from its stdout, and its stdin feed; the process is run like
every runtime's, here or on the node the turn is placed on), typed requests and the dispatch of the agent's
notifications and requests to ``TurnClient``. Here is only what a turn does with them: ``initialize``; ``session/new``
with our MCP shim in ``mcpServers`` (or, for a session the gateway already has, ``session/resume`` where the agent
offers it, else ``session/load`` with the replayed history skipped); ``session/prompt``; updates become our events
(message chunks as live text, thoughts, tool calls and their results, the plan); ``session/request_permission`` is
answered from the run's permission mode and, when it asks, from the person (``RunSpec.approve``: the chat's buttons,
allow-always rules); a /stop (the run's task cancelled) sends ``session/cancel`` and gives the agent a moment to end
the prompt before the process is stopped. The runner's no-output watchdog counts any message from the agent, and is
held while a person decides.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import structlog
from acp import PROTOCOL_VERSION, Client, RequestError, connect_to_agent, text_block
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    EnvVariable,
    FileSystemCapabilities,
    Implementation,
    McpServerStdio,
    PermissionOption,
    PromptResponse,
    RequestPermissionResponse,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UsageUpdate,
)

from gateway.agents.runtimes.base import ASKING_MODES, Event, Invocation, RunSpec, mcp_server_name
from gateway.agents.runtimes.conversation import file_changes, line
from gateway.agents.runtimes.process import ProcessResult, StdinFeed, run_process

if TYPE_CHECKING:
    from gateway.agents.runtimes.base import Stdin
    from gateway.agents.runtimes.driver import ProcessRunner

__all__ = ["CANCEL_GRACE_S", "FeedTransport", "TurnClient", "run_acp_turn"]

log = structlog.get_logger(__name__)

CANCEL_GRACE_S = 3.0
"""After ``session/cancel``: how long the agent may take to end the prompt before its process group is stopped."""
REPLAY_QUIET_S = 0.4
"""After ``session/load``: the history an agent replays (Gemini sends it after its answer) has ended once no update
came for this long; the prompt goes then, and nothing replayed is taken for this turn's."""
READ_ONLY_KINDS = ("read", "search", "think")
"""Tool kinds ``ask-dangerous`` lets run without asking (the read tools of docs/approvals.md)."""
OUR_PREFIXES = (f"mcp__{mcp_server_name}__", f"mcp_{mcp_server_name}_", f"{mcp_server_name}_")
"""How agents spell our MCP server's tools; each is reported as ``mcp__remoteclaw__<tool>``, as every runtime does."""
_WANT = {"allow-once": ("allow_once", "allow_always"), "allow-always": ("allow_always", "allow_once")}


def _text(content: Any) -> str:
    """The text in ACP content: a block, a tool call's ``content`` item or a list of them."""
    if isinstance(content, list):
        return "\n".join(t for t in (_text(c) for c in content) if t)
    kind = getattr(content, "type", None)
    if kind == "text":
        return str(getattr(content, "text", "") or "")
    if kind == "content":
        return _text(getattr(content, "content", None))
    return ""


_MCP_TITLE = re.compile(r"^(\S+) \((\S+) MCP Server\)")
_NAME_END = re.compile(r"[\s(:]|-\d")


def tool_name(call: ToolCallStart | ToolCallProgress | ToolCallUpdate) -> str:
    """The tool's name. Claude's adapter states it in ``_meta``; other agents put it in the title or the call id
    (Gemini: ``<tool>-<time>-<n>``, titles ``<tool> (<server> MCP Server)``). Ours is reported as
    ``mcp__remoteclaw__<tool>`` whatever the agent's spelling."""
    meta = call.field_meta or {}
    claude = meta.get("claudeCode")
    named = claude.get("toolName") if isinstance(claude, dict) else None
    for candidate in (named, call.title, call.tool_call_id):
        if not candidate:
            continue
        m = _MCP_TITLE.match(candidate)
        if m and m.group(2) == mcp_server_name:
            return f"mcp__{mcp_server_name}__{m.group(1)}"
        for prefix in OUR_PREFIXES:
            rest = _NAME_END.split(candidate[len(prefix):])[0] if candidate.startswith(prefix) else ""
            if rest:
                return f"mcp__{mcp_server_name}__{rest}"
    return str(named or call.title or call.tool_call_id or "tool")


def _diffs(content: Any) -> list[dict[str, Any]]:
    """A tool call's diff items as ``file_changes`` reads them (a unified diff per file)."""
    out = []
    for c in content or []:
        if getattr(c, "type", None) == "diff":
            old, new = str(c.old_text or ""), str(c.new_text or "")
            diff = "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), "before", "after"))
            out.append({"path": c.path, "kind": {"type": "add"} if c.old_text is None else None, "diff": diff})
    return out


class TurnClient:
    """The client side of one turn (the SDK calls ``session_update`` and ``request_permission``)."""

    def __init__(self, spec: RunSpec, emit: Callable[[Event], None], feed: Stdin | None = None) -> None:
        self.spec = spec
        self.emit = emit
        self.feed = feed
        """The agent's stdin: its ``holds`` keep the runner's no-output watchdog off while a person decides."""
        self._holds = 0
        self.session_id: str | None = None
        self.replaying = False
        self.last_seen = time.monotonic()
        self.cost_before: float | None = None
        self.cost: float | None = None
        self._text: list[str] = []
        self._thought: list[str] = []
        self._started: set[str] = set()
        self._ended: set[str] = set()

    @property
    def holds(self) -> int:
        return self.feed.holds if self.feed is not None else self._holds

    @holds.setter
    def holds(self, n: int) -> None:
        if self.feed is not None:
            self.feed.holds = n
        else:
            self._holds = n

    def seen(self, _event: Any) -> None:
        """Any message from the agent: it is alive (the no-output watchdog)."""
        self.last_seen = time.monotonic()

    def flush(self) -> None:
        if self._thought:
            self.emit(Event("thinking", text="".join(self._thought)))
        if self._text:
            self.emit(Event("text", text="".join(self._text)))
        self._text, self._thought = [], []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.last_seen = time.monotonic()
        if isinstance(update, UsageUpdate) and update.cost is not None and update.cost.currency == "USD":
            if self.replaying or self.session_id is None:
                self.cost_before = update.cost.amount
            else:
                self.cost = update.cost.amount
            return
        if self.replaying:
            return
        if isinstance(update, AgentMessageChunk):
            text = _text(update.content)
            if text:
                self._text.append(text)
                self.emit(Event("text_delta", text=text))
        elif isinstance(update, AgentThoughtChunk):
            self._thought.append(_text(update.content))
        elif isinstance(update, ToolCallStart | ToolCallProgress):
            self._tool(update, final=True)
        elif isinstance(update, AgentPlanUpdate) and update.entries:
            marks = {"completed": "[x]", "in_progress": "[~]", "pending": "[ ]"}
            plan = "\n".join(f"{marks.get(e.status, '[ ]')} {e.content}" for e in update.entries)
            self.flush()
            self.emit(Event("thinking", text=f"Plan:\n{plan}"))

    def _tool(self, call: ToolCallStart | ToolCallProgress | ToolCallUpdate, *, final: bool = False) -> None:
        """A tool call once (announced by its start, its update or a permission request), and its result once."""
        cid = call.tool_call_id
        if cid not in self._started:
            self._started.add(cid)
            self.flush()
            inp = call.raw_input if call.raw_input is not None else {"title": call.title}
            self.emit(Event("tool_use", tool_id=cid, tool_name=tool_name(call), tool_input=inp))
        if call.status in ("completed", "failed") and cid not in self._ended and final:
            self._ended.add(cid)
            output = _text(call.content) or call.raw_output
            self.emit(Event("tool_result", tool_id=cid, tool_name=tool_name(call), tool_output=output,
                            is_error=call.status == "failed"))

    async def request_permission(self, options: list[PermissionOption], session_id: str, tool_call: ToolCallUpdate,
                                 **kwargs: Any) -> RequestPermissionResponse:
        """Answer from the permission mode; in an asking mode, from the person (the watchdog held meanwhile)."""
        self.last_seen = time.monotonic()
        if tool_call.tool_call_id not in self._started and tool_call.title:
            self._tool(tool_call)  # an agent may ask before it announces the call: the progress note shows it
        name, inp = self._asked_as(tool_call)
        mode = self.spec.permissions
        read_only = mode == "ask-dangerous" and tool_call.kind in READ_ONLY_KINDS
        if name.startswith(f"mcp__{mcp_server_name}__") or mode == "bypass" or read_only:
            decision = "allow-once"
        elif mode not in ASKING_MODES or self.spec.approve is None:
            decision = "deny"
        else:
            self.holds += 1
            try:
                decision = str((await self.spec.approve(name, inp)).get("decision") or "deny")
            finally:
                self.holds -= 1
                self.last_seen = time.monotonic()
        kinds = _WANT.get(decision, ("reject_once", "reject_always"))
        chosen = next((o for kind in kinds for o in options if o.kind == kind), None)
        log.info("acp permission answered", tool=name, kind=tool_call.kind, decision=decision,
                 offered=[(o.option_id, o.kind) for o in options], chosen=chosen.option_id if chosen else None)
        if chosen is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=chosen.option_id))

    def _asked_as(self, call: ToolCallUpdate) -> tuple[str, dict[str, Any]]:
        """How the person is asked: a command as ``Bash`` with its command line and an edit as ``Edit`` with its
        files (the same names and allow-always rules as the bespoke runtimes), anything else under its name."""
        raw = call.raw_input if isinstance(call.raw_input, dict) else {}
        if call.kind == "execute":
            command = raw.get("command") or raw.get("cmd") or call.title
            if isinstance(command, list):
                command = " ".join(map(str, command))
            return "Bash", {"command": command}
        if call.kind in ("edit", "delete", "move") and _diffs(call.content):
            return "Edit", file_changes(_diffs(call.content), self.spec.workspace)
        inp = {k: v for k, v in raw.items() if v is not None} or {"description": call.title}
        return tool_name(call), inp

    async def write_text_file(self, *args: Any, **kwargs: Any) -> None:
        raise RequestError.method_not_found("fs/write_text_file")

    async def read_text_file(self, *args: Any, **kwargs: Any) -> None:
        raise RequestError.method_not_found("fs/read_text_file")

    async def create_terminal(self, *args: Any, **kwargs: Any) -> None:
        raise RequestError.method_not_found("terminal/create")

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None


async def run_acp_turn(inv: Invocation, spec: RunSpec, emit: Callable[[Event], None], *, meta: dict[str, Any],
                       modes: tuple[str, ...] = (), no_output_timeout: float,
                       on_spawn: Callable[[float], None] | None = None,
                       process: ProcessRunner | None = None) -> ProcessResult:
    """Run one turn of the ACP agent ``inv`` (already confined) and return how its process ended.

    The process is run as every other runtime's (``process``: ``run_process`` here, or the node the turn is placed
    on): its output messages come in as decoded lines, the SDK's go out through its stdin (``StdinFeed``), so the
    conversation is the same whether the process is local or its stdin and stdout are a node's. The per-run files,
    the watchdog (held while a person decides) and the stop are the runner's."""
    feed = StdinFeed()
    wire = FeedTransport(feed)
    client = TurnClient(spec, emit, feed)
    runner = process or run_process
    spawned = asyncio.Event()

    def started(at: float) -> None:
        spawned.set()  # its stdin is the feed's from here (a node's: queued until its CLI runs)
        if on_spawn is not None:
            on_spawn(at)

    ran = asyncio.create_task(runner(inv, wire.put, no_output_timeout=no_output_timeout, on_spawn=started,
                                     feed=feed), name="acp-process")
    ran.add_done_callback(lambda _t: wire.eof())
    conn = connect_to_agent(cast("Client", client), cast(Any, wire), observers=[client.seen])

    async def conversation() -> None:
        await spawned.wait()
        await _converse(conn, client, spec, meta, modes)

    turn = asyncio.create_task(conversation())
    try:
        await asyncio.wait({turn, ran}, return_when=asyncio.FIRST_COMPLETED)
        if turn.done():  # the turn is over: stdin closed, the agent exits (or is stopped after LINGER_S)
            with contextlib.suppress(Exception):
                await conn.close()
            feed.close()
        try:
            result = await ran
        except BaseException:
            turn.cancel()
            raise
        if not result.watchdog_fired:  # its end of stream ends the conversation too
            await asyncio.wait({turn}, timeout=5)
        turn.cancel()
        with contextlib.suppress(BaseException):
            await turn
    except asyncio.CancelledError:  # /stop, a timeout, an interrupting message: ask the agent to stop first
        await asyncio.shield(_cancel(conn, client, turn, ran))
        raise
    if turn.done() and not turn.cancelled() and turn.exception() is not None:
        exc = turn.exception()
        tail = result.stderr_tail.splitlines()
        detail = tail[-1] if tail else ""
        text = _error_text(exc)
        client.flush()
        emit(Event("error", text=f"{text}: {detail}" if detail and detail not in text else text))
        emit(Event("done", session_id=client.session_id, is_error=True))
    return result


class FeedTransport:
    """The SDK's message transport (``acp._transport.Transport``) over a process's decoded output lines and its
    stdin feed: the same for a local process and a node's."""

    def __init__(self, feed: StdinFeed) -> None:
        self._feed = feed
        self._inbox: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

    def put(self, obj: dict[str, Any]) -> None:
        """One message from the agent (the runner's ``on_object``)."""
        self._inbox.put_nowait(obj)

    def eof(self) -> None:
        self._inbox.put_nowait(None)

    async def send(self, message: dict[str, Any]) -> None:
        if not self._feed.write(line(message)):
            raise ConnectionError("the agent's stdin is closed")

    async def receive(self) -> dict[str, Any] | None:
        return await self._inbox.get()

    async def close(self) -> None:
        self._feed.close()


def _error_text(exc: BaseException | None) -> str:
    if isinstance(exc, RequestError):
        data = exc.data if isinstance(exc.data, dict) else {}
        details = data.get("details") if isinstance(data.get("details"), str) else None
        return f"{exc}" + (f" ({details})" if details else "")
    if isinstance(exc, ConnectionError):
        return "the agent's process ended before the turn did"
    return f"{type(exc).__name__}: {exc}"


async def _converse(conn: Any, client: TurnClient, spec: RunSpec, meta: dict[str, Any],
                    modes: tuple[str, ...]) -> None:
    """initialize, the session, the prompt; the events of the turn end with ``done``."""
    init = await conn.initialize(
        protocol_version=PROTOCOL_VERSION,
        client_capabilities=ClientCapabilities(fs=FileSystemCapabilities(read_text_file=False, write_text_file=False),
                                               terminal=False),
        client_info=Implementation(name="remoteclaw", title="remoteclaw gateway", version="0.1.0"))
    caps = init.agent_capabilities
    mcp = [McpServerStdio(name=spec.mcp.name, command=spec.mcp.command, args=list(spec.mcp.args),
                          env=[EnvVariable(name=k, value=v) for k, v in spec.mcp.env.items()])]
    cwd = str(spec.workspace)
    sid = spec.resume_id
    resume = caps is not None and caps.session_capabilities is not None and caps.session_capabilities.resume is not None
    load = caps is not None and bool(caps.load_session)
    if sid and (resume or load):
        try:
            if resume:
                client.session_id = None  # a usage update during resume states the cost so far
                session = await conn.resume_session(session_id=sid, cwd=cwd, mcp_servers=mcp, **meta)
            else:
                client.replaying = True
                session = await conn.load_session(session_id=sid, cwd=cwd, mcp_servers=mcp, **meta)
                await _replay_ended(client)
        except RequestError as exc:  # the agent no longer knows it: the driver starts the turn afresh
            client.replaying = False
            client.emit(Event("error", text=f"session {sid} could not be resumed ({_error_text(exc)})"))
            client.emit(Event("done", session_id=None, is_error=True))
            return
        client.replaying = False
        client.session_id = sid
    else:
        if sid:
            log.info("acp agent cannot resume sessions: a new one", session=sid)
        session = await conn.new_session(cwd=cwd, mcp_servers=mcp, **meta)
        client.session_id = session.session_id
    await _set_mode(conn, client.session_id, getattr(session, "modes", None), modes)
    response: PromptResponse = await conn.prompt(session_id=client.session_id, prompt=[text_block(spec.prompt)])
    client.flush()
    usage: dict[str, int] = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
    if response.usage is not None:
        u = response.usage
        usage = {"input": u.input_tokens, "output": u.output_tokens, "cacheRead": u.cached_read_tokens or 0,
                 "cacheWrite": u.cached_write_tokens or 0}
    else:  # Gemini states the turn's tokens in ``_meta.quota.token_count``
        quota = (response.field_meta or {}).get("quota")
        tokens = quota.get("token_count") if isinstance(quota, dict) else None
        if isinstance(tokens, dict):
            usage["input"] = int(tokens.get("input_tokens") or 0)
            usage["output"] = int(tokens.get("output_tokens") or 0)
    cost = None
    if client.cost is not None:
        cost = max(0.0, client.cost - (client.cost_before or 0.0))
    if response.stop_reason in ("cancelled", "refusal"):
        client.emit(Event("error", text=f"the turn ended: {response.stop_reason}"))
        client.emit(Event("done", session_id=client.session_id, usage=usage, cost_usd=cost, is_error=True))
        return
    client.emit(Event("done", session_id=client.session_id, usage=usage, cost_usd=cost, model=spec.model))


async def _set_mode(conn: Any, session_id: str, offered: Any, wanted: tuple[str, ...]) -> None:
    """Put the session in the first of ``wanted`` the agent offers, unless it is in it already."""
    if offered is None or not wanted:
        return
    ids = [m.id for m in offered.available_modes or []]
    mode = next((w for w in wanted if w in ids), None)
    if mode is not None and mode != offered.current_mode_id:
        await conn.set_session_mode(session_id=session_id, mode_id=mode)


async def _replay_ended(client: TurnClient) -> None:
    """Wait until the loaded session's replayed history has stopped coming."""
    client.last_seen = time.monotonic()
    while time.monotonic() - client.last_seen < REPLAY_QUIET_S:  # noqa: ASYNC110 (a quiet period, not an event)
        await asyncio.sleep(REPLAY_QUIET_S / 4)


async def _cancel(conn: Any, client: TurnClient, turn: asyncio.Task[None], ran: asyncio.Task[ProcessResult]) -> None:
    """``session/cancel``, a moment for the agent to end the prompt, then its process is stopped."""
    if client.session_id is not None and not turn.done() and not ran.done():
        with contextlib.suppress(Exception):
            await asyncio.wait_for(conn.cancel(session_id=client.session_id), 1.0)
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(asyncio.shield(turn), CANCEL_GRACE_S)
    turn.cancel()
    with contextlib.suppress(BaseException):
        await turn
    with contextlib.suppress(Exception):
        await conn.close()
    ran.cancel()  # the runner stops the process group (on a node: the node does)
    with contextlib.suppress(BaseException):
        await ran
