"""One agent turn the gateway placed on this node (``agent.run``), and what the gateway needs to build it
(``agent.describe``).

The gateway builds the CLI's command line with the runtime adapter it uses for a local turn (its parser stays
there too) from the paths this node describes; the node checks it against what its owner lends (the CLI, the
folders), writes the per-run files, starts it inside its own bubblewrap sandbox (the node's state dir, identity
and token are not in it; HOME is a folder of the agent's own on this node) and sends every NDJSON line of its
output to the gateway as it comes (``node.agent.output``), before answering the invoke with how the process
ended and the side effects its tools recorded. The MCP shim inside connects to the gateway itself, outbound, with
the run's own token: a node behind NAT needs no inbound port. A cancel (``/stop``) kills the CLI's process group.

A turn started with ``keepStdin`` keeps its CLI's stdin open: the gateway writes to it with ``agent.input
{turnId, seq, data?, holds?, close?}`` (steering messages, a JSON-RPC conversation with the CLI), one call after
the other; a call is taken only for a turn running here, in order (a repeated ``seq`` is answered again and
not written twice, a gap is refused).

A turn in a project (``agent.project``, ``workdirs``) works in the project folder or the session's worktree of it,
and its diff is made here and sent back with the answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nodes.agents.files import attachments_of, drop_attachments, place_attachments, read_turn_file
from nodes.agents.settings import AgentHostSettings
from nodes.agents.workdirs import ACTIONS, act, diff_ask, diff_since, parse_project, resolve, snapshot_of
from nodes.errors import CommandError

if TYPE_CHECKING:
    from gateway.agents.runtimes.process import StdinFeed

__all__ = ["COMMANDS", "AgentRunner"]

COMMANDS = ("agent.describe", "agent.project", "agent.run", "agent.file", "agent.input")
CAPS = ("agent",)
MAX_EFFECTS_BYTES = 1_000_000
MAX_BATCH = 200
"""Output lines per ``node.agent.output`` call at most."""
MAX_INPUT_CHARS = 1024 * 1024
"""Characters of stdin per ``agent.input`` call at most (the gateway sends half of it at most)."""
ATTACH_WAIT_S = 10.0
"""How long an ``agent.input`` waits for its turn's CLI to have started."""

_AGENT_ID = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_HASH = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_FORBIDDEN_ENV = ("LD_", "DYLD_")

Report = Callable[[dict[str, Any]], Awaitable[None]]
"""Sends one ``node.agent.output`` to the gateway (awaits its answer: output arrives in order)."""


def _take_back(fx: Path, tools: Path, private: Path | None, lent: Path | None = None) -> str:
    """The side-effect records the turn's tools wrote, and the turn's files gone (its private workspace too, or
    the attachments in the lent folder ``lent``)."""
    effects = fx.read_bytes()[:MAX_EFFECTS_BYTES].decode("utf-8", "replace") if fx.exists() else ""
    fx.unlink(missing_ok=True)
    tools.unlink(missing_ok=True)
    if private is not None:
        shutil.rmtree(private, ignore_errors=True)
    if lent is not None:
        drop_attachments(lent)
    return effects


def _inside(path: Path, roots: list[Path]) -> bool:
    return any(path == r or r in path.parents for r in roots)


def _str_list(params: dict[str, Any], name: str) -> list[str]:
    value = params.get(name) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CommandError("INVALID_REQUEST", f"agent.run: {name} must be a list of strings")
    return value


class _Output:
    """The turn's output lines on their way to the gateway: batched while a call is out, sent in order."""

    def __init__(self, turn_id: str, report: Report) -> None:
        self.turn_id = turn_id
        self.report = report
        self.pending: list[Any] = []
        self.seq = 0
        self.wake = asyncio.Event()
        self.closed = False
        self.task = asyncio.create_task(self._send())

    def add(self, item: Any) -> None:
        self.pending.append(item)
        self.wake.set()

    async def _send(self) -> None:
        while True:
            await self.wake.wait()
            self.wake.clear()
            while self.pending:
                batch, self.pending = self.pending[:MAX_BATCH], self.pending[MAX_BATCH:]
                self.seq += 1
                try:
                    await self.report({"turnId": self.turn_id, "seq": self.seq, "lines": batch})
                except Exception as exc:  # the link dropped: the gateway fails the turn (NODE_DISCONNECTED)
                    print(f"node-host: agent output not delivered: {exc}", file=sys.stderr, flush=True)
            if self.closed:
                return

    async def close(self) -> None:
        self.closed = True
        self.wake.set()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.task, 30)


@dataclass(slots=True)
class _Stdin:
    """A running turn's open stdin, and the last ``agent.input`` written to it."""

    feed: StdinFeed
    started: asyncio.Event = field(default_factory=asyncio.Event)
    seq: int = 0


class AgentRunner:
    """Serves ``agent.describe`` and ``agent.run`` for the CLIs and folders the node's owner lends."""

    caps = CAPS
    commands = COMMANDS

    def __init__(self, state: Path, gateway_url: str, report: Report) -> None:
        self.state = state
        self.gateway_url = gateway_url
        self.report = report
        self.runs_dir = state / "agent-runs"
        self.homes_dir = state / "agent-homes"
        self.cli_state_dir = state / "agent-state"
        self._turns: dict[str, Path] = {}
        """The turns running here, by turn id: their folder (where ``agent.file`` reads)."""
        self._stdin: dict[str, _Stdin] = {}
        """The turns running here with their stdin open, by turn id."""
        self._sweep()

    def _sweep(self) -> None:
        """What turns of a previous process of this node left behind (killed mid-turn: their sandboxed CLIs died
        with it, bubblewrap's ``--die-with-parent``): their hand-back files and private workspaces. The gateway
        has kept their messages; nothing of them is read again."""
        if not self.runs_dir.is_dir():
            return
        for left in self.runs_dir.iterdir():
            if left.is_dir() and _HASH.match(left.name):
                shutil.rmtree(left, ignore_errors=True)
            elif left.name.endswith((".side-effects.ndjson", ".plugin-tools.json")):
                left.unlink(missing_ok=True)

    @property
    def settings(self) -> AgentHostSettings:
        """Read at every call: an edit by the node's owner applies to the next turn."""
        return AgentHostSettings.load(self.state)

    def declared_caps(self) -> tuple[str, ...]:
        """``agent``, and what is lent (``agent-cli:claude``, ``agent-folder:/home/me/code``): the owner sees it in
        the pairing request before approving."""
        settings = self.settings
        return (*CAPS, *(f"agent-cli:{name}" for name in sorted(settings.resolved())),
                *(f"agent-folder:{folder}" for folder in settings.folders))

    async def run(self, command: str, params: dict[str, Any], invoke_id: str) -> dict[str, Any]:
        if command == "agent.describe":
            return self.describe()
        if command == "agent.file":
            return await self.file(params)
        if command == "agent.input":
            return await self.input(params)
        if command == "agent.project":
            return await self.project(params)
        return await self.turn(params)

    async def project(self, params: dict[str, Any]) -> dict[str, Any]:
        """A session's project on this node: where it works (described, or made ready: its worktree added on
        first use), what is uncommitted there, the repository's conversation worktrees, this one's removed."""
        action = params.get("action", "describe")
        if action not in ACTIONS:
            raise CommandError("INVALID_REQUEST", f"agent.project: action must be one of {', '.join(ACTIONS)}")
        diff = diff_ask(params) if action == "sessionDiff" else ("all", None)
        return await act(action, parse_project(params.get("project"), "agent.project"), self.settings.folders,
                         diff)

    async def file(self, params: dict[str, Any]) -> dict[str, Any]:
        """A file the agent of a turn running here sends: read inside that turn's folder only (``files``)."""
        turn_id, path, limit = params.get("turnId"), params.get("path"), params.get("maxBytes")
        if not isinstance(path, str) or not path or len(path) > 4096:
            raise CommandError("INVALID_REQUEST", "agent.file: path must be a file path")
        if not isinstance(limit, int) or isinstance(limit, bool) or limit <= 0:
            raise CommandError("INVALID_REQUEST", "agent.file: maxBytes must be a positive number")
        cwd = self._turns.get(turn_id) if isinstance(turn_id, str) else None
        if cwd is None:
            raise CommandError("INVALID_REQUEST", f"agent.file: no turn {turn_id} is running on this node")
        return await asyncio.to_thread(read_turn_file, cwd, path, limit)

    async def input(self, params: dict[str, Any]) -> dict[str, Any]:
        """Stdin for a running turn: written in order, once; ``closed`` when its CLI's stdin is closed already."""
        turn_id, seq, data = params.get("turnId"), params.get("seq"), params.get("data")
        holds, close = params.get("holds"), params.get("close")
        if not isinstance(turn_id, str) or not turn_id:
            raise CommandError("INVALID_REQUEST", "agent.input: turnId must be a run id")
        if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
            raise CommandError("INVALID_REQUEST", "agent.input: seq must be a positive integer")
        if data is not None and (not isinstance(data, str) or len(data) > MAX_INPUT_CHARS):
            raise CommandError("INVALID_REQUEST", f"agent.input: data must be a string of at most {MAX_INPUT_CHARS} "
                                                  "characters")
        if holds is not None and (not isinstance(holds, int) or isinstance(holds, bool) or holds < 0):
            raise CommandError("INVALID_REQUEST", "agent.input: holds must be a count")
        if close is not None and not isinstance(close, bool):
            raise CommandError("INVALID_REQUEST", "agent.input: close must be a boolean")
        stdin = self._stdin.get(turn_id)
        if stdin is None:
            raise CommandError("NOT_FOUND", f"agent.input: no turn {turn_id} with an open stdin runs on this node")
        if seq <= stdin.seq:
            return {"ok": True, "repeat": True, "closed": stdin.feed.closed}
        if seq != stdin.seq + 1:
            raise CommandError("INVALID_REQUEST", f"agent.input: seq {seq} out of order (the last was {stdin.seq})")
        try:
            await asyncio.wait_for(stdin.started.wait(), ATTACH_WAIT_S)
        except TimeoutError:
            raise CommandError("UNAVAILABLE", "agent.input: the turn's CLI has not started") from None
        stdin.seq = seq
        written = stdin.feed.write(data.encode()) if data else not stdin.feed.closed
        if holds is not None:
            stdin.feed.holds = holds
        if close:
            stdin.feed.close()
        return {"ok": True, "written": written, "closed": stdin.feed.closed}

    def describe(self) -> dict[str, Any]:
        from gateway.sandbox.probe import probe_bwrap

        settings = self.settings
        probe = probe_bwrap() if settings.sandbox == "bwrap" else None
        return {"python": sys.executable, "gatewayUrl": self.gateway_url, "runsDir": str(self.runs_dir),
                "homesDir": str(self.homes_dir), "stateDir": str(self.cli_state_dir), "home": str(Path.home()),
                "clis": settings.resolved(), "folders": settings.folders, "credentials": settings.credentials,
                "sandbox": settings.sandbox, "sandboxProblem": (probe.why or None) if probe is not None and not probe.ok
                else None, "platform": sys.platform}

    # -- one turn --------------------------------------------------------------------------------

    async def turn(self, params: dict[str, Any]) -> dict[str, Any]:
        from gateway.agents.runtimes.process import StdinFeed, run_process

        settings = self.settings
        keep = params.get("keepStdin") is True
        where = None
        if params.get("project") is not None:  # a project folder or worktree here: checked, made, snapshotted
            where = await resolve(parse_project(params["project"], "agent.run"), settings.folders, create=True)
            if params.get("private") or Path(str(params.get("cwd") or "")) != where.path:
                raise CommandError("INVALID_REQUEST", f"agent.run: cwd must be the project's folder here, {where.path}")
        inv, turn_id, cwd, private, fx, tools = await asyncio.to_thread(
            self._plan, params, settings, [where.git_dir] if where is not None and where.git_dir else [])
        if turn_id in self._stdin:
            raise CommandError("INVALID_REQUEST", f"agent.run: turn {turn_id} already runs on this node")
        before = await snapshot_of(where) if where is not None else None
        out = _Output(turn_id, self.report)
        stdin = _Stdin(StdinFeed()) if keep else None
        if stdin is not None:
            inv.keep_stdin = True
            inv.stdin = inv.stdin if inv.stdin is not None else b""
            self._stdin[turn_id] = stdin

        def spawned(_at: float) -> None:
            out.add({"_spawned": True})
            if stdin is not None:
                stdin.started.set()

        started = time.time()
        lent = cwd if not private and params.get("attachments") else None
        self._turns[turn_id] = cwd
        try:
            result = await run_process(inv, out.add, no_output_timeout=float(params.get("noOutputTimeoutS") or 180),
                                       on_spawn=spawned, feed=stdin.feed if stdin is not None else None)
        except (FileNotFoundError, PermissionError) as exc:
            raise CommandError("UNAVAILABLE", f"agent.run: the CLI could not start on this node: {exc}") from None
        finally:
            self._turns.pop(turn_id, None)
            if stdin is not None:
                self._stdin.pop(turn_id, None)
            await out.close()
            effects = await asyncio.to_thread(_take_back, fx, tools, cwd if private else None, lent)
        diff = await diff_since(where, before) if where is not None else None
        return {"diff": diff, "returncode": result.returncode, "stderrTail": result.stderr_tail[-4000:],
                "stdoutNoise": result.stdout_noise[-40:], "watchdogFired": result.watchdog_fired,
                "sideEffects": effects, "startedAtMs": int(started * 1000), "sandbox": settings.sandbox}

    def _plan(self, params: dict[str, Any], settings: AgentHostSettings,
              git_dirs: list[Path]) -> tuple[Any, str, Path, bool, Path, Path]:
        """The turn checked against what the node's owner lends, its files written, its command confined (a
        worktree's repository git folder writable too: its commits go there)."""
        from gateway.agents.runtimes.base import Invocation

        turn_id = params.get("turnId")
        agent_id = params.get("agentId")
        runtime = params.get("runtime")
        if not isinstance(turn_id, str) or not _HASH.match(turn_id.replace("-", "_")):
            raise CommandError("INVALID_REQUEST", "agent.run: turnId must be a run id")
        if not isinstance(agent_id, str) or not _AGENT_ID.match(agent_id):
            raise CommandError("INVALID_REQUEST", "agent.run: agentId must be an agent id")
        lent = settings.resolved()
        if not isinstance(runtime, str) or runtime not in lent:
            raise CommandError("FORBIDDEN", f"agent.run: this node does not lend the {runtime} CLI (its owner "
                                            f"lends: {', '.join(sorted(lent)) or 'none'}; remoteclaw node agents "
                                            "set clis ...)")
        argv = _str_list(params, "argv")
        cli = lent[runtime]
        if argv[:len(cli)] != cli:
            raise CommandError("FORBIDDEN", f"agent.run: argv must start with the lent command {' '.join(cli)}")
        cwd = Path(str(params.get("cwd") or ""))
        private = bool(params.get("private"))
        roots = [Path(f) for f in settings.folders]
        if not cwd.is_absolute() or ".." in cwd.parts:
            raise CommandError("INVALID_REQUEST", "agent.run: cwd must be an absolute path")
        if private:
            if cwd.parent != self.runs_dir or not _HASH.match(cwd.name):
                raise CommandError("FORBIDDEN", "agent.run: a private workspace is a folder of the node's runs dir")
        elif not _inside(cwd, roots):
            raise CommandError("FORBIDDEN", f"agent.run: {cwd} is not in a folder this node lends (its owner lends: "
                                            f"{', '.join(settings.folders) or 'none'}; remoteclaw node agents set "
                                            "folders ...)")
        elif not cwd.is_dir():
            raise CommandError("INVALID_REQUEST", f"agent.run: cwd {cwd} is not a folder on this node")
        env = params.get("env") or {}
        if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
            raise CommandError("INVALID_REQUEST", "agent.run: env must be an object of strings")
        bad = sorted(k for k in env if k.upper().startswith(_FORBIDDEN_ENV))
        if bad:
            raise CommandError("INVALID_REQUEST", f"agent.run: env may not set {', '.join(bad)}")
        files = params.get("files") or {}
        if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
            raise CommandError("INVALID_REQUEST", "agent.run: files must be an object of path -> text")
        outside = [k for k in files if ".." in Path(k).parts or not _inside(Path(k), [cwd])]
        if outside:
            raise CommandError("FORBIDDEN", f"agent.run: files must be in the workspace: {', '.join(outside)}")
        stdin = params.get("stdin")
        if stdin is not None and not isinstance(stdin, str):
            raise CommandError("INVALID_REQUEST", "agent.run: stdin must be a string")
        idle = params.get("noOutputTimeoutS") or 180
        if not isinstance(idle, int | float) or isinstance(idle, bool) or idle <= 0:
            raise CommandError("INVALID_REQUEST", "agent.run: noOutputTimeoutS must be a positive number")
        logins = [rel for rel in _str_list(params, "logins")
                  if not Path(rel).is_absolute() and ".." not in Path(rel).parts]
        session = str(params.get("session") or "")
        if not _HASH.match(session):
            raise CommandError("INVALID_REQUEST", "agent.run: session must be the session's folder name")
        attachments = attachments_of(params)

        fx = self.runs_dir / f"{turn_id}.side-effects.ndjson"
        tools = self.runs_dir / f"{turn_id}.plugin-tools.json"
        cli_state = self.cli_state_dir / session
        home = self.homes_dir / agent_id
        for folder in (self.runs_dir, self.homes_dir, self.cli_state_dir, home, cli_state):
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        if private:
            shutil.rmtree(cwd, ignore_errors=True)
            cwd.mkdir(mode=0o700)
        try:
            place_attachments(cwd, private, attachments)
        except CommandError:
            _take_back(fx, tools, cwd if private else None, cwd if attachments and not private else None)
            raise
        fx.write_bytes(b"")
        fx.chmod(0o600)
        tools.write_text(str(params.get("pluginTools") or '{"tools": []}'))
        # The gateway names the hand-back files by the places this node described; they are ours, not its.
        env = {**env, "REMOTECLAW_SIDE_EFFECTS_FILE": str(fx), "REMOTECLAW_PLUGIN_TOOLS_FILE": str(tools)}
        inv = Invocation(argv=argv, env=env, cwd=cwd, files={Path(k): v for k, v in files.items()},
                         stdin=stdin.encode() if stdin is not None else None,
                         pass_env=tuple(_str_list(params, "passEnv")))
        try:
            inv = self._confine(inv, settings, home=home, write=[cwd, fx, cli_state, *git_dirs],
                                read=[tools], logins=logins)
        except BaseException:
            _take_back(fx, tools, cwd if private else None, cwd if attachments and not private else None)
            raise
        return inv, turn_id, cwd, private, fx, tools

    def _confine(self, inv: Any, settings: AgentHostSettings, *, home: Path, write: list[Path], read: list[Path],
                 logins: list[str]) -> Any:
        """The turn inside this node's bubblewrap sandbox (or, where its owner set ``sandbox off``, as it is, with a
        HOME of the agent's own either way)."""
        from dataclasses import replace

        from gateway.sandbox.layout import Layout, runtime_roots
        from gateway.sandbox.probe import probe_bwrap
        from gateway.sandbox.service import git_protected, wrap_bwrap

        real_home = Path.home()
        if settings.sandbox == "off":
            return replace(inv, env={**inv.env, "HOME": str(real_home if settings.credentials == "own" else home)})
        probe = probe_bwrap()
        if not probe.ok or probe.path is None:
            raise CommandError("UNAVAILABLE", f"agent.run: this node cannot sandbox the turn ({probe.why}); its owner "
                                              "can fix that, or set remoteclaw node agents set sandbox off")
        layout = Layout(cwd=inv.cwd, home=home, home_at=home,
                        hide=[self.state.resolve(), self.state / "identity.json", self.state / "node.json"])
        layout.write = list(write)
        layout.protect = git_protected(layout.write)  # a project's .git/config and hooks: read-only, as locally
        layout.read = [*runtime_roots(), *read,
                       *(Path(a) for a in inv.argv if os.path.isabs(a) and os.path.isfile(a))]
        if settings.credentials == "own":  # this machine's CLI login, shown in the agent's HOME
            for rel in logins:
                login = real_home / rel
                if login.exists():
                    layout.home_binds.append((login, home / rel, True))
                    target = home / rel
                    if login.is_dir():
                        target.mkdir(parents=True, exist_ok=True)
                    else:
                        target.parent.mkdir(parents=True, exist_ok=True)
                        target.touch(exist_ok=True)
        return wrap_bwrap(inv, probe.path, layout)
