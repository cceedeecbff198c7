"""What the desktop adds to the node: ``desktop.<tool>`` per Cua Driver tool, its tool list, and trajectories.

``DesktopCommands.create`` probes the machine (``probe.py``), starts one ``cua-driver mcp`` for the node's life
(``driver.py``) and reads its tools; a node without the driver, a display or the accessibility bus gets None
and the reason, declares no desktop command, and tells the gateway why (``capabilities.unavailable``).

Commands:

- ``desktop.<tool>``: the driver's tool with the params as its arguments; answers the driver's
  ``CallToolResult`` as it is (``content`` with text and images, ``structuredContent``, ``isError``).
- ``desktop.tools``: the tools offered, each as the driver declares it (name, description, inputSchema,
  annotations), and those withheld with the reason (the gateway builds its agent tools from this).
- ``desktop.record.start {name?, recordVideo?}`` / ``desktop.record.stop``: a trajectory recorded by the
  driver (``start_recording``/``stop_recording``) into the node's state dir, sent back zipped.
- ``desktop.replay {zipBase64, pid?, windowId?, delayMs?, stopOnError?}``: ``replay_trajectory`` of a
  recording, retargeted to a fresh instance of the app when ``pid``/``windowId`` are given.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import os
import re
import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from nodes.desktop.driver import CuaDriver, DriverError, driver_env
from nodes.desktop.probe import Probe, probe
from nodes.desktop.settings import NETWORK_TOOLS, DesktopSettings
from nodes.desktop.trajectory import ZipTooLarge, prune, retarget, turns, unzip_safely, zip_recording
from nodes.errors import CommandError

__all__ = ["PREFIX", "DesktopCommands"]

PREFIX = "desktop."
OWN_COMMANDS = ("desktop.tools", "desktop.record.start", "desktop.record.stop", "desktop.replay")
RECORD_TIMEOUT_S = 60.0
"""Starting or stopping a recording (a tool call is bounded by the caller's timeoutMs, in the node host)."""
_NAME = re.compile(r"^[a-z0-9_]{1,60}$")


@dataclass(slots=True)
class Recording:
    trajectory_id: str
    folder: Path
    started_ms: int


class DesktopCommands:
    """The desktop of one node: its Cua Driver process and the commands made from its tools."""

    def __init__(self, driver: CuaDriver, found: Probe, settings: DesktopSettings, state: Path) -> None:
        self.driver = driver
        self.found = found
        self.settings = settings
        self.root = state / "desktop" / "trajectories"
        self.withheld: dict[str, str] = {}
        self.offered: dict[str, dict[str, Any]] = {}
        self.recording: Recording | None = None
        self._select()

    @classmethod
    async def create(cls, state: Path) -> tuple[DesktopCommands | None, Probe]:
        """The desktop, or None and what was found (with ``reason``) when it cannot be offered."""
        try:
            settings = DesktopSettings.load(state)
        except ValueError as exc:
            return None, Probe(reason=str(exc), missing="settings")
        if not settings.enabled:
            return None, Probe(reason="the desktop is switched off on this node (remoteclaw node desktop set "
                                      "enabled true)", missing="disabled")
        env = driver_env(os.environ, telemetry=settings.telemetry)
        found = await probe(settings.driver_path, env)
        if found.reason is not None or found.driver is None:
            return None, found
        driver = CuaDriver(found.driver, env)
        try:
            await driver.start()
        except DriverError as exc:
            found.reason, found.missing = str(exc), "cua-driver"
            return None, found
        return cls(driver, found, settings, state), found

    def _select(self) -> None:
        """Which of the driver's tools become commands, and why the others do not."""
        self.offered, self.withheld = {}, {}
        for tool in self.driver.tools:
            name = tool["name"]
            if not _NAME.match(name):
                continue
            if name in NETWORK_TOOLS and not self.settings.update_checks:
                self.withheld[name] = ("update checks and downloads are off on this node (remoteclaw node desktop "
                                       "set updateChecks true)")
            elif any(fnmatchcase(name, pattern) for pattern in self.settings.deny_tools):
                self.withheld[name] = "the node's owner withheld it (desktop setting denyTools)"
            else:
                self.offered[name] = tool

    @property
    def caps(self) -> tuple[str, ...]:
        return ("desktop",)

    @property
    def commands(self) -> tuple[str, ...]:
        return (*OWN_COMMANDS, *(PREFIX + name for name in self.offered))

    async def close(self) -> None:
        if self.recording is not None:
            with contextlib.suppress(Exception):
                await self.driver.call("stop_recording", {}, timeout=5)
        await self.driver.close()

    async def run(self, command: str, params: dict[str, Any]) -> Any:
        if command == "desktop.tools":
            return self.tool_list()
        if command == "desktop.record.start":
            return await self.record_start(params)
        if command == "desktop.record.stop":
            return await self.record_stop()
        if command == "desktop.replay":
            return await self.replay(params)
        name = command.removeprefix(PREFIX)
        if name not in self.offered:
            why = self.withheld.get(name, "Cua Driver has no such tool")
            raise CommandError("UNAVAILABLE", f"this node does not offer {command}: {why}")
        return await self.call(name, params)

    async def call(self, name: str, arguments: dict[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
        try:
            result = await self.driver.call(name, arguments, timeout=timeout)
        except TimeoutError:
            raise CommandError("UNAVAILABLE", f"cua-driver did not answer {name} within {timeout:g} s") from None
        except DriverError as exc:
            raise CommandError("UNAVAILABLE", f"{name} failed in cua-driver: {exc}") from None
        return {k: result[k] for k in ("content", "structuredContent", "isError") if k in result}

    def tool_list(self) -> dict[str, Any]:
        return {"tools": list(self.offered.values()), "withheld": dict(self.withheld),
                "driver": {"version": self.found.version, "server": self.driver.server_info,
                           "telemetry": self.settings.telemetry, "updateChecks": self.settings.update_checks}}

    # -- trajectories ----------------------------------------------------------------------------

    async def record_start(self, params: dict[str, Any]) -> dict[str, Any]:
        if self.recording is not None:
            raise CommandError("INVALID_REQUEST", f"a recording is already running on this node "
                                                  f"({self.recording.trajectory_id}): stop it first")
        video = params.get("recordVideo", self.settings.record_video)
        if not isinstance(video, bool):
            raise CommandError("INVALID_REQUEST", "recordVideo must be true or false")
        wanted = params.get("trajectoryId")
        if wanted is not None and (not isinstance(wanted, str) or not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", wanted)):
            raise CommandError("INVALID_REQUEST", "trajectoryId must be 1-64 letters, digits, _ or -")
        trajectory_id = wanted or time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)
        folder = self.root / trajectory_id
        if folder.exists():
            raise CommandError("INVALID_REQUEST", f"trajectoryId {trajectory_id} is already taken on this node")
        folder.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        video = video and shutil.which("ffmpeg") is not None
        result = await self.call("start_recording", {"output_dir": str(folder), "record_video": video},
                                 timeout=RECORD_TIMEOUT_S)
        if result.get("isError"):
            raise CommandError("UNAVAILABLE", f"cua-driver did not start recording: {_text(result)}")
        self.recording = Recording(trajectory_id, folder, int(time.time() * 1000))
        return {"trajectoryId": trajectory_id, "outputDir": str(folder), "video": video,
                "startedAtMs": self.recording.started_ms}

    async def record_stop(self) -> dict[str, Any]:
        recording = self.recording
        if recording is None:
            raise CommandError("INVALID_REQUEST", "no recording is running on this node")
        result = await self.call("stop_recording", {}, timeout=RECORD_TIMEOUT_S)
        self.recording = None
        if result.get("isError"):
            raise CommandError("UNAVAILABLE", f"cua-driver did not stop recording: {_text(result)}")
        recording.folder.mkdir(parents=True, exist_ok=True)  # nothing recorded: an empty trajectory
        try:
            data, notes = await asyncio.to_thread(zip_recording, recording.folder)
        except ZipTooLarge as exc:
            raise CommandError("UNAVAILABLE", str(exc)) from None
        await asyncio.to_thread(prune, self.root)
        return {"trajectoryId": recording.trajectory_id, "turns": turns(recording.folder),
                "startedAtMs": recording.started_ms, "stoppedAtMs": int(time.time() * 1000),
                "zipBase64": base64.b64encode(data).decode(), "size": len(data), "notes": notes,
                "nodeFolder": str(recording.folder)}

    async def replay(self, params: dict[str, Any]) -> dict[str, Any]:
        raw = params.get("zipBase64")
        if not isinstance(raw, str) or not raw:
            raise CommandError("INVALID_REQUEST", "zipBase64 is required: the trajectory zip, base64")
        pid, window_id = params.get("pid"), params.get("windowId")
        for field, value in (("pid", pid), ("windowId", window_id)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise CommandError("INVALID_REQUEST", f"{field} must be a non-negative integer")
        delay = params.get("delayMs", 200)
        if not isinstance(delay, int) or isinstance(delay, bool) or not 0 <= delay <= 10_000:
            raise CommandError("INVALID_REQUEST", "delayMs must be an integer from 0 to 10000")
        stop_on_error = params.get("stopOnError", True)
        if not isinstance(stop_on_error, bool):
            raise CommandError("INVALID_REQUEST", "stopOnError must be true or false")
        try:
            data = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            raise CommandError("INVALID_REQUEST", "zipBase64 is not base64") from None
        with tempfile.TemporaryDirectory(prefix="replay-") as tmp:
            folder = Path(tmp) / "trajectory"
            try:
                await asyncio.to_thread(unzip_safely, data, folder)
                retargeted = await asyncio.to_thread(retarget, folder, pid, window_id)
            except (ValueError, OSError) as exc:  # a bad zip (BadZipFile is a ValueError... of its own)
                raise CommandError("INVALID_REQUEST", f"the trajectory zip cannot be replayed: {exc}") from None
            except Exception as exc:
                raise CommandError("INVALID_REQUEST", f"the trajectory zip cannot be read: {exc}") from None
            result = await self.call("replay_trajectory", {"dir": str(folder), "delay_ms": delay,
                                                          "stop_on_error": stop_on_error})
        out: dict[str, Any] = {"retargetedTurns": retargeted, **result}
        return out


def _text(result: dict[str, Any]) -> str:
    parts = [c.get("text") for c in result.get("content") or [] if isinstance(c, dict) and c.get("type") == "text"]
    return " ".join(p for p in parts if isinstance(p, str))[:500] or "no reason given"
