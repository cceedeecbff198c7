"""The commands this node host serves: ``system.run``, ``system.which``, ``system.notify``.

Each takes the decoded params and returns a JSON-able payload, or raises ``CommandError`` with a code the
gateway passes on. ``system.run`` executes only what the exec approvals allow, never through a shell
(argv, not a command line), with a time limit that kills the whole process group and a cap on the output
it keeps.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
import time
from typing import TYPE_CHECKING, Any

from nodes.approvals import ExecApprovals
from nodes.errors import CommandError

if TYPE_CHECKING:
    from nodes.agents.runner import AgentRunner
    from nodes.browser.service import BrowserCommands
    from nodes.desktop.service import DesktopCommands

__all__ = ["COMMANDS", "CommandError", "Commands"]

COMMANDS = ("system.run", "system.which", "system.notify")
CAPS = ("system",)

DEFAULT_TIMEOUT_MS = 60_000
MAX_TIMEOUT_MS = 600_000
DEFAULT_OUTPUT_BYTES = 200_000
MAX_OUTPUT_BYTES = 5_000_000

_FORBIDDEN_ENV = ("LD_", "DYLD_")
"""Environment names a caller may not set: they would load code into whatever runs."""


def _argv(params: dict[str, Any]) -> list[str]:
    argv = params.get("argv", params.get("command"))
    if isinstance(argv, str):
        raise CommandError("INVALID_REQUEST", "system.run takes argv as a list of strings, not a command line "
                                              "(no shell runs it)")
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise CommandError("INVALID_REQUEST", "system.run needs argv: a non-empty list of strings")
    return argv


def _env(params: dict[str, Any]) -> dict[str, str] | None:
    extra = params.get("env")
    if extra is None:
        return None
    if not isinstance(extra, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in extra.items()):
        raise CommandError("INVALID_REQUEST", "env must be an object of string values")
    bad = [k for k in extra if k.upper().startswith(_FORBIDDEN_ENV)]
    if bad:
        raise CommandError("INVALID_REQUEST", f"env may not set {', '.join(sorted(bad))}")
    return {**os.environ, **extra}


def _bounded_int(params: dict[str, Any], name: str, default: int, top: int) -> int:
    value = params.get(name, default)
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise CommandError("INVALID_REQUEST", f"{name} must be a positive integer")
    return min(value, top)


class _Capped:
    """Keeps the first ``limit`` bytes of a stream and counts the rest."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.dropped = 0

    async def drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65536):
            room = self.limit - len(self.data)
            if room > 0:
                self.data += chunk[:room]
            self.dropped += max(0, len(chunk) - max(room, 0))

    def text(self) -> str:
        return self.data.decode("utf-8", "replace")


class Commands:
    """Serves the node's commands. ``running`` maps an invocation id to its process, for cancellation."""

    def __init__(self, approvals: ExecApprovals, browser: BrowserCommands | None = None) -> None:
        self.approvals = approvals
        self.browser = browser
        self.desktop: DesktopCommands | None = None
        """Cua Driver's tools, set once the node has probed for them (``NodeHost.run``)."""
        self.agents: AgentRunner | None = None
        """Agent turns (``agent.run``), when the node's owner lends agent CLIs (``nodes.agents``)."""
        self.running: dict[str, asyncio.subprocess.Process] = {}

    @property
    def declared(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``(caps, commands)`` this node announces at connect."""
        caps: tuple[str, ...] = CAPS
        commands: tuple[str, ...] = COMMANDS
        for extra in (self.browser, self.desktop):
            if extra is not None:
                caps, commands = (*caps, *extra.caps), (*commands, *extra.commands)
        if self.agents is not None:
            caps, commands = (*caps, *self.agents.declared_caps()), (*commands, *self.agents.commands)
        return caps, commands

    async def run(self, command: str, params: Any, invoke_id: str) -> Any:
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise CommandError("INVALID_REQUEST", f"{command} params must be an object")
        if command == "system.run":
            return await self.system_run(params, invoke_id)
        if command == "system.which":
            return self.system_which(params)
        if command == "system.notify":
            return await self.system_notify(params)
        if self.browser is not None and command in self.browser.commands:
            return await self.browser.run(command, params)
        if self.desktop is not None and command.startswith("desktop."):
            return await self.desktop.run(command, params)
        if self.agents is not None and command in self.agents.commands:
            return await self.agents.run(command, params, invoke_id)
        raise CommandError("UNAVAILABLE", f"this node does not serve {command}")

    async def system_run(self, params: dict[str, Any], invoke_id: str) -> dict[str, Any]:
        argv = _argv(params)
        env = _env(params)
        cwd = params.get("cwd")
        if cwd is not None and (not isinstance(cwd, str) or not _is_dir(cwd)):
            raise CommandError("INVALID_REQUEST", f"cwd is not a directory on this node: {cwd}")
        timeout_ms = _bounded_int(params, "timeoutMs", DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS)
        cap = _bounded_int(params, "maxOutputBytes", DEFAULT_OUTPUT_BYTES, MAX_OUTPUT_BYTES)
        verdict = self.approvals.check(argv[0], env, cwd)
        if verdict.executable is None:
            raise CommandError("INVALID_REQUEST", f"{argv[0]}: command not found on this node")
        if not verdict.allowed:
            raise CommandError("FORBIDDEN", f"{verdict.executable} is not in this node's exec approvals "
                                            f"(on the node: remoteclaw node approvals add {os.path.basename(argv[0])})")
        started = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(
            verdict.executable, *argv[1:], cwd=cwd, env=env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True)
        self.running[invoke_id] = proc
        out, err = _Capped(cap), _Capped(cap)
        assert proc.stdout is not None and proc.stderr is not None
        readers = asyncio.gather(out.drain(proc.stdout), err.drain(proc.stderr))
        timed_out = False
        try:
            await asyncio.wait_for(asyncio.shield(readers), timeout_ms / 1000)
            await proc.wait()
        except TimeoutError:
            timed_out = True
            _kill_group(proc)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(readers, 5)
            await proc.wait()
        finally:
            self.running.pop(invoke_id, None)
            if proc.returncode is None:  # cancelled: never leave the command running
                _kill_group(proc)
        code = proc.returncode
        return {
            "exitCode": code if code is not None and code >= 0 else None,
            "signal": signal.Signals(-code).name if code is not None and code < 0 else None,
            "success": code == 0 and not timed_out,
            "timedOut": timed_out,
            "stdout": out.text(),
            "stderr": err.text(),
            "truncated": bool(out.dropped or err.dropped),
            "droppedBytes": out.dropped + err.dropped,
            "durationMs": round((time.perf_counter() - started) * 1000, 1),
            "executable": verdict.executable,
        }

    def cancel(self, invoke_id: str) -> bool:
        proc = self.running.get(invoke_id)
        if proc is None:
            return False
        _kill_group(proc)
        return True

    @staticmethod
    def system_which(params: dict[str, Any]) -> dict[str, Any]:
        bins = params.get("bins")
        if not isinstance(bins, list) or not all(isinstance(b, str) for b in bins):
            raise CommandError("INVALID_REQUEST", "system.which needs bins: a list of program names")
        found = {b: path for b in bins if (path := shutil.which(b))}
        return {"bins": found}

    @staticmethod
    async def system_notify(params: dict[str, Any]) -> dict[str, Any]:
        title = params.get("title") or "remoteclaw"
        body = params.get("body") or params.get("message") or ""
        if not isinstance(title, str) or not isinstance(body, str):
            raise CommandError("INVALID_REQUEST", "title and body must be strings")
        sender = shutil.which("notify-send")
        if sender is not None and (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            proc = await asyncio.create_subprocess_exec(sender, title, body, stdout=asyncio.subprocess.DEVNULL,
                                                        stderr=asyncio.subprocess.DEVNULL)
            if await proc.wait() == 0:
                return {"delivered": True, "via": "notify-send"}
        # No desktop here (a server, a container): the node's own log is where a person will look.
        print(f"[notify] {title}: {body}", file=sys.stderr, flush=True)
        return {"delivered": True, "via": "log"}


def _is_dir(path: str) -> bool:
    return os.path.isdir(path)


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
