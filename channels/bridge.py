"""The bridge: inbound message -> session -> agent run -> progress events -> reply on the channel.

Stored as ``gateway.services["bridge"]`` and installed as the run queue's executor, so every run
(from a channel, ``agent``, ``chat.send``, a sub-agent or cron) goes through the same steps:

1. a fresh workspace (with the message's downloaded attachments in ``attachments/``) and side-effects
   file, the ``REMOTECLAW_*`` context for the MCP shim;
2. the agent's CLI through its runtime adapter, resuming the session's CLI session when there is one;
3. each event broadcast as ``agent``/``chat`` events and written to the transcript;
4. usage and the new CLI session id saved; workspace and side-effects file removed;
5. for channel runs, the reply delivered: reply tags applied, ``NO_REPLY`` honoured, split to the
   channel's limit, and skipped when a message tool already sent the same text to the same chat.
   A failed run tells the user why in one line.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import shutil
import stat
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import structlog

from channels import commands
from channels.base import Capability, Inbound
from channels.progress import ProgressNote
from channels.runtimes import Event, McpServer, RunSpec, get_runtime
from channels.runtimes.driver import run_turn
from channels.runtimes.prompt import SILENT_REPLY, build_system_prompt
from gateway.auth import BASELINE_RUN_METHODS, RunTokens
from gateway.rpc import OPERATOR_SCOPES, READ, WRITE
from gateway.runs import Origin, Run, RunOutcome, RunQueue, RunRequest
from gateway.sessions import inbound_key
from gateway.store.sessions import SessionRepo

if TYPE_CHECKING:
    from gateway.core import Gateway
    from gateway.sessions import SessionsService

__all__ = ["Bridge", "clean_reply", "is_duplicate", "start"]

log = structlog.get_logger("channels.bridge")

ATTACHMENTS_DIR = "attachments"  # inside the run's workspace

_REPLY_TAG = re.compile(r"\[\[\s*reply_to(?:_current|\s*:\s*([^\]\s]+))\s*\]\]", re.IGNORECASE)
_WS = re.compile(r"\s+")


def clean_reply(text: str) -> tuple[str, bool, str | None]:
    """``(text without reply tags, silent?, reply-to id or "current")``."""
    reply_to: str | None = None
    m = _REPLY_TAG.search(text)
    if m:
        reply_to = m.group(1) or "current"
    body = _REPLY_TAG.sub("", text).strip()
    return body, body in ("", SILENT_REPLY), reply_to


def _norm(text: str | None) -> str:
    return _WS.sub(" ", (text or "").strip()).lower()


def is_duplicate(reply: str, effects: list[dict[str, Any]], origin: Origin) -> bool:
    """Whether a message tool already sent ``reply`` (or a text containing it) to the reply's chat."""
    want = _norm(reply)
    if not want:
        return False
    for fx in effects:
        if fx.get("type") != "message_sent":
            continue
        channel = fx.get("provider") or fx.get("channel")
        if channel not in (None, origin.channel) or str(fx.get("to") or origin.to) != str(origin.to):
            continue
        sent = _norm(fx.get("text"))
        if sent and (sent == want or want in sent or (len(sent) > 20 and sent in want)):
            return True
    return False


def _one_line(text: str, limit: int = 300) -> str:
    line = _WS.sub(" ", text).strip()
    return line if len(line) <= limit else line[: limit - 1] + "…"


class Bridge:
    """Runs agent turns for the run queue and connects channels to sessions."""

    def __init__(self, gateway: Gateway, runs: RunQueue, sessions: SessionsService) -> None:
        self.gw = gateway
        self.runs = runs
        self.sessions = sessions
        self.root = Path(tempfile.gettempdir()) / "remoteclaw-runs"
        # One folder per gateway (per state dir): two gateways on one machine may hold the same session key,
        # and each removes its workspace after every turn.
        state_id = hashlib.sha256(str(gateway.state_dir.resolve()).encode()).hexdigest()[:12]
        self.runs_dir = self.root / state_id
        self.tokens: RunTokens = gateway.services.setdefault("run_tokens", RunTokens())

    # -- inbound ------------------------------------------------------------------------------

    async def handle_inbound(self, msg: Inbound, *, is_owner: bool, tool_profile: str | None = None) -> None:
        """Queue a run for a message the channel layer already let through (access and owner decided)."""
        agent = self.sessions.agent(None)
        key = inbound_key(agent.id, self.gw.config.session.dmScope, channel=msg.channel,
                          account_id=msg.account_id, chat_type=msg.chat_type, chat_id=msg.chat_id,
                          sender_id=msg.sender_id, thread_id=msg.thread_id)
        await self.sessions.ensure(key, channel=msg.channel, account_id=msg.account_id, peer_id=msg.chat_id,
                                   chat_type=msg.chat_type, thread_id=msg.thread_id)
        async with self.gw.db.session() as s:  # remember the latest route: where deliver:true replies go
            row = await SessionRepo.get(s, key)
            if row is not None:
                row.channel, row.account_id, row.peer_id = msg.channel, msg.account_id, msg.chat_id
                row.chat_type, row.thread_id = msg.chat_type, msg.thread_id
        origin = Origin(channel=msg.channel, account_id=msg.account_id, to=msg.chat_id, chat_type=msg.chat_type,
                        thread_id=msg.thread_id, reply_to_id=msg.message_id, sender_id=msg.sender_id,
                        sender_name=msg.sender_name)
        text = msg.text
        command = commands.parse(text) if self.gw.config.messages.commands else None
        if command is not None:
            cmd, rest = command
            log.info("chat command", command=cmd.name, session_key=key, sender=msg.sender_id)
            await self.send(origin, await self._answer_command(cmd, key), key)
            if cmd.name != "new" or not (rest or msg.media):
                return
            text = rest  # "/new <text>": the first message of the new conversation
        files: list[str] = []
        for m in msg.media:
            if m.path:  # downloaded: the agent reads its copy in the workspace
                files.append(m.path)
                where = f"{ATTACHMENTS_DIR}/{Path(m.path).name}"
            else:
                where = m.url or "(not downloaded)"
            text += f"\n[attachment: {m.kind} {where}]"
        if msg.chat_type != "dm" and msg.sender_name:
            text = f"[{msg.sender_name}] {text}"
        await self.runs.submit(RunRequest(session_key=key, agent_id=agent.id, message=text, source="channel",
                                          is_owner=is_owner, tool_profile=tool_profile, origin=origin,
                                          deliver=True, files=tuple(files)))
        await self._typing(origin)

    async def _answer_command(self, cmd: commands.Command, key: str) -> str:
        if cmd.name == "stop":
            stopped, _forwarded = await self.runs.abort_everywhere(key)
            return "⏹ Stopped." if stopped else "Nothing is running."
        if cmd.name == "new":
            await self.sessions.reset(key)
            return "🆕 New conversation: the agent starts fresh."
        if cmd.name == "status":
            return await self._status_text(key)
        return commands.help_text()

    async def _status_text(self, key: str) -> str:
        st = await self.sessions.status(key)
        run = st["run"]
        doing = "idle"
        if run["active"]:
            doing = "working" + (f", {run['queued']} message(s) waiting" if run["queued"] else "")
        lines = [f"Agent: {st['agentId']} ({st['runtime']}{', ' + st['model'] if st['model'] else ''})",
                 f"Now: {doing}",
                 f"Tokens: {st['inputTokens']:,} in, {st['outputTokens']:,} out",
                 f"Session: {key}"]
        return "\n".join(lines)

    async def _typing(self, origin: Origin) -> float | None:
        """Show the typing indicator once; returns how long the platform keeps showing it."""
        mgr = self.gw.services.get("channels")
        if mgr is None:
            return None
        try:
            ch = mgr.get(origin.channel, origin.account_id)
            await ch.typing(origin.to, thread_id=origin.thread_id)
        except Exception:
            log.debug("typing indicator failed", channel=origin.channel)
            return None
        return ch.typing_lasts_s

    def _progress_note(self, run: Run) -> ProgressNote | None:
        """A progress note for a channel turn whose channel can edit and delete messages, if enabled."""
        origin = run.last.origin
        mgr = self.gw.services.get("channels")
        if origin is None or not run.last.deliver or mgr is None or not self.gw.config.messages.progress:
            return None
        try:
            ch = mgr.get(origin.channel, origin.account_id)
        except Exception:
            return None
        if not {Capability.EDIT, Capability.DELETE} <= ch.capabilities:
            return None
        thread = origin.thread_id if Capability.THREAD_REPLY in ch.capabilities else None
        return ProgressNote(ch, origin.to, thread_id=thread)

    async def _keep_typing(self, origin: Origin) -> None:
        """Renew the indicator just before it fades, for as long as the turn runs (cancelled at its end)."""
        while True:
            lasts = await self._typing(origin)
            if lasts is None:  # no indicator on this channel, or it failed: stop trying for this turn
                return
            await asyncio.sleep(lasts * 0.8)

    # -- running ------------------------------------------------------------------------------

    def _run_token(self, run: Run) -> str:
        """A token for this run's shim only, capped to its tier (the agent can read it; see ``RunTokens``)."""
        owner = run.is_owner and run.first.source != "cron"
        if owner:
            return self.tokens.issue(frozenset(OPERATOR_SCOPES))
        return self.tokens.issue(frozenset({READ, WRITE}), methods=BASELINE_RUN_METHODS)

    async def _idle_expired(self, key: str) -> bool:
        """Whether ``session.idleMinutes`` have passed since the session's last turn ended."""
        idle = self.gw.config.session.idleMinutes
        if not idle:
            return False
        async with self.gw.db.session() as s:
            last = await SessionRepo.last_run_end(s, key)
        if last is None:
            return False
        if last.tzinfo is None:  # SQLite hands back naive UTC
            last = last.replace(tzinfo=UTC)
        return (datetime.now(UTC) - last).total_seconds() > idle * 60

    def _context_env(self, run: Run, fx_path: Path, token: str) -> dict[str, str]:
        host, port = self.gw.services.get("listen", ("127.0.0.1", 0))
        host = "127.0.0.1" if host in ("0.0.0.0", "", "::") else host
        origin = run.last.origin
        agent = self.sessions.agent(run.agent_id)
        profile = run.last.tool_profile
        if profile is None:
            profile = agent.toolProfile if "toolProfile" in agent.model_fields_set else self.gw.config.tools.profile
        env = {
            "REMOTECLAW_GATEWAY_URL": f"ws://{host}:{port}/",
            "REMOTECLAW_GATEWAY_TOKEN": token,
            "REMOTECLAW_SESSION_KEY": run.session_key,
            "REMOTECLAW_SIDE_EFFECTS_FILE": str(fx_path),
            "REMOTECLAW_SENDER_IS_OWNER": "true" if run.is_owner and run.first.source != "cron" else "false",
            "REMOTECLAW_TOOL_PROFILE": profile,
            "REMOTECLAW_RUN_ID": run.id,
            "REMOTECLAW_AGENT_ID": run.agent_id,
        }
        if origin is not None:
            env["REMOTECLAW_CHANNEL"] = origin.channel
            env["REMOTECLAW_TO"] = origin.to
            if origin.account_id:
                env["REMOTECLAW_ACCOUNT_ID"] = origin.account_id
            if origin.thread_id:
                env["REMOTECLAW_THREAD_ID"] = origin.thread_id
        return env

    def _prompt(self, run: Run) -> str:
        if len(run.requests) == 1:
            return run.first.message
        parts = [f"({len(run.requests)} messages arrived while you were busy; answer them together.)"]
        parts += [f"[{i}] {m}" for i, m in enumerate(run.messages, 1)]
        return "\n\n".join(parts)

    async def execute(self, run: Run) -> RunOutcome:
        agent = self.sessions.agent(run.agent_id, field="sessionKey")
        runtime = get_runtime(agent.runtime)
        row = await self.sessions.get(run.session_key)
        resume_id = row.cli_session(runtime.name) if row is not None else None
        if resume_id and await self._idle_expired(run.session_key):
            log.info("session idle: starting a fresh conversation", session_key=run.session_key)
            resume_id = None
        # A stable path per session (removed after each run): CLIs file their resumable sessions by cwd.
        workspace = self.runs_dir / hashlib.sha256(run.session_key.encode()).hexdigest()[:20]
        fx_path = self.runs_dir / f"{run.id}.side-effects.ndjson"
        _private_dir(self.root)
        _private_dir(self.runs_dir)
        shutil.rmtree(workspace, ignore_errors=True)
        workspace.mkdir(mode=0o700)
        if any(req.files for req in run.requests):
            await asyncio.to_thread(_copy_attachments, run, workspace / ATTACHMENTS_DIR)
        token = self._run_token(run)
        stream: _Stream | None = None
        typing: asyncio.Task[None] | None = None
        progress: ProgressNote | None = None
        try:  # from the moment the token exists it must be revoked, whatever happens next
            ctx_env = self._context_env(run, fx_path, token)
            spec = RunSpec(
                prompt=self._prompt(run),
                system_prompt=build_system_prompt(agent_name=agent.name or agent.id, session_key=run.session_key,
                                                  origin=run.last.origin, is_owner=run.is_owner,
                                                  source=run.first.source),
                workspace=workspace,
                mcp=McpServer(command=sys.executable, args=("-m", "mcp_shim"), env=ctx_env),
                resume_id=resume_id, model=agent.model, command=agent.command, env=dict(agent.env),
                state_dir=self.gw.state_dir / "runtimes" / workspace.name,
            )
            progress = self._progress_note(run)
            stream = _Stream(self.runs, run, progress)
            origin = run.last.origin
            if origin is not None and run.last.deliver:
                typing = asyncio.create_task(self._keep_typing(origin), name=f"typing-{run.id}")

            def on_spawn(at: float) -> None:
                run.spawned_mono = at

            res = await run_turn(runtime, spec, stream.on_event,
                                 no_output_timeout=self.gw.config.agents.noOutputTimeoutSeconds, on_spawn=on_spawn)
        finally:  # what must happen comes first, without an await that a cancellation could cut short
            if typing is not None:
                typing.cancel()
            self.tokens.revoke(token)
            run.side_effects = _read_effects(fx_path)
            shutil.rmtree(workspace, ignore_errors=True)
            fx_path.unlink(missing_ok=True)
            if progress is not None:
                await progress.close()
            if stream is not None:
                await stream.save()
        async with self.gw.db.session() as s:
            if res.retried_fresh:
                await SessionRepo.forget_cli_session(s, run.session_key, runtime.name)
            await SessionRepo.record_usage(s, run.session_key, runtime=runtime.name,
                                           cli_session_id=res.session_id if res.ok or res.session_id else None,
                                           usage=res.usage, model=res.model)
            if res.ok:
                await SessionRepo.add_entry(s, run.session_key, "assistant", res.reply, run_id=run.id)
        if not res.ok:
            return RunOutcome(status="error", error=res.error or "the agent failed")
        return RunOutcome(status="ok", reply=res.reply)

    # -- delivery -----------------------------------------------------------------------------

    async def after_run(self, run: Run) -> None:
        """Deliver a channel run's reply, or one line saying why it failed."""
        origin = run.last.origin
        if origin is None or not run.last.deliver or run.status == "aborted":
            return
        if run.status != "ok":
            why = run.error or "unknown error"
            await self.send(origin, _one_line(f"⚠️ Sorry, that didn't work: {why}"), run.session_key)
            return
        body, silent, reply_to = clean_reply(run.reply)
        if silent:
            log.info("silent reply", run_id=run.id)
            return
        if is_duplicate(body, run.side_effects, origin):
            log.info("reply already sent by a message tool", run_id=run.id)
            return
        reply_to_id = origin.reply_to_id if reply_to == "current" else reply_to
        await self.send(origin, body, run.session_key, reply_to_id=reply_to_id)

    async def send(self, origin: Origin, text: str, session_key: str, *, reply_to_id: str | None = None) -> int:
        mgr = self.gw.services.get("channels")
        if mgr is None:
            log.warning("no channels on this gateway: reply not delivered", session_key=session_key)
            return 0
        ch = mgr.get(origin.channel, origin.account_id)
        # Through the manager, so the reply is split for the channel and stored for message.read. A reply
        # target or thread the channel cannot address is dropped rather than failing the whole reply.
        sent = await mgr.send_text(
            origin.channel, ch.account_id, origin.to, text,
            thread_id=origin.thread_id if Capability.THREAD_REPLY in ch.capabilities else None,
            reply_to_id=reply_to_id if Capability.REPLY in ch.capabilities else None,
            session_key=session_key,
        )
        return len(sent)


class _Stream:
    """Turns runtime events into ``agent``/``chat`` events and transcript rows for one run."""

    def __init__(self, runs: RunQueue, run: Run, progress: ProgressNote | None = None) -> None:
        self.runs, self.run, self.progress = runs, run, progress
        self.text = ""
        self.tools: dict[str, dict[str, Any]] = {}
        self.entries: list[dict[str, Any]] = []

    def on_event(self, ev: Event) -> None:
        run = self.run
        if ev.kind == "text":
            self.text = f"{self.text}\n\n{ev.text}" if self.text else ev.text
            self.runs.emit_agent(run, "assistant", {"text": ev.text, "delta": ev.text})
            self.runs.emit_chat(run, "delta", self.text)
        elif ev.kind == "thinking":
            self.runs.emit_agent(run, "thinking", {"text": ev.text})
        elif ev.kind == "tool_use":
            tid = ev.tool_id or f"tool-{len(self.tools)}"
            self.tools[tid] = {"name": ev.tool_name, "input": ev.tool_input, "started": time.monotonic()}
            if self.progress is not None:
                self.progress.step(ev.tool_name)
            self.runs.emit_agent(run, "tool", {"phase": "start", "id": tid, "name": ev.tool_name,
                                               "input": ev.tool_input})
        elif ev.kind == "tool_result":
            tid = ev.tool_id or ""
            call = self.tools.pop(tid, {"name": ev.tool_name, "input": None})
            self.runs.emit_agent(run, "tool", {"phase": "result", "id": tid, "name": call["name"] or ev.tool_name,
                                               "output": ev.tool_output, "isError": ev.is_error})
            self.entries.append({"name": call["name"] or ev.tool_name, "input": call["input"],
                                 "output": ev.tool_output, "isError": ev.is_error})

    async def save(self) -> None:
        if not self.entries:
            return
        async with self.runs.gw.db.session() as s:
            for tool in self.entries:
                await SessionRepo.add_entry(s, self.run.session_key, "tool", str(tool["name"] or ""),
                                            run_id=self.run.id, tool=tool)


def _private_dir(path: Path) -> None:
    """Make ``path`` a 0700 directory of ours; refuse one another user owns (the temp dir is shared)."""
    path.mkdir(mode=0o700, exist_ok=True)
    st = path.lstat()
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise RuntimeError(f"{path} is not a directory owned by this user: refusing to run agents in it")
    if st.st_mode & 0o077:
        os.chmod(path, 0o700)


def _copy_attachments(run: Run, dest: Path) -> None:
    """Copy every request's files into the workspace (CLIs may read only below their working directory)."""
    for source in (f for req in run.requests for f in req.files):
        try:
            dest.mkdir(mode=0o700, exist_ok=True)
            shutil.copyfile(source, dest / Path(source).name)
        except OSError as exc:
            log.warning("attachment not copied into the workspace", run_id=run.id, file=source, error=str(exc))


def _read_effects(path: Path) -> list[dict[str, Any]]:
    try:
        lines = path.read_bytes().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out


async def start(gateway: Gateway) -> None:
    runs: RunQueue = gateway.services["runs"]
    bridge = Bridge(gateway, runs, gateway.services["sessions"])
    runs.executor = bridge.execute
    runs.after_run = bridge.after_run
    gateway.services["bridge"] = bridge
