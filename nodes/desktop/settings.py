"""What the node's desktop may do, set by the person who runs the node (never by the gateway).

``desktop.json`` in the node's state dir, read when the node starts:

    {"enabled": true, "telemetry": false, "updateChecks": false, "driverPath": null,
     "recordVideo": false, "denyTools": []}

Cua Driver sends product telemetry and asks GitHub for updates by default; here both are off until the owner
turns them on (``telemetry``, ``updateChecks``: the latter also gates the driver's tools that download and
install software). ``denyTools`` holds Cua Driver tool names (globs) the node must not offer at all;
``recordVideo`` records the screen to ``recording.mp4`` in trajectories when ffmpeg is installed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nodes.state import read_json, write_private

__all__ = ["BOOLEAN_KEYS", "KEYS", "NETWORK_TOOLS", "DesktopSettings"]

KEYS = ("enabled", "telemetry", "updateChecks", "driverPath", "recordVideo", "denyTools")
BOOLEAN_KEYS = ("enabled", "telemetry", "updateChecks", "recordVideo")
NETWORK_TOOLS = ("check_for_update", "install_extension", "install_ffmpeg")
"""Cua Driver tools that reach the network to check for or install software: offered only with ``updateChecks``."""


@dataclass(slots=True)
class DesktopSettings:
    enabled: bool = True
    telemetry: bool = False
    update_checks: bool = False
    driver_path: str | None = None
    record_video: bool = False
    deny_tools: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, state: Path) -> DesktopSettings:
        path = state / "desktop.json"
        data = read_json(path)
        deny = data.get("denyTools") or []
        if not isinstance(deny, list) or not all(isinstance(t, str) for t in deny):
            raise ValueError(f"{path}: denyTools must be a list of tool names")
        driver = data.get("driverPath")
        return cls(enabled=data.get("enabled") is not False, telemetry=data.get("telemetry") is True,
                   update_checks=data.get("updateChecks") is True,
                   driver_path=driver if isinstance(driver, str) and driver else None,
                   record_video=data.get("recordVideo") is True, deny_tools=deny)

    def describe(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "telemetry": self.telemetry, "updateChecks": self.update_checks,
                "driverPath": self.driver_path, "recordVideo": self.record_video, "denyTools": self.deny_tools}

    @staticmethod
    def update(state: Path, key: str, value: object) -> None:
        """Set one key in ``desktop.json`` (``remoteclaw node desktop set``)."""
        if key not in KEYS:
            raise ValueError(f"unknown desktop setting {key!r} (known: {', '.join(KEYS)})")
        if key in BOOLEAN_KEYS and not isinstance(value, bool):
            raise ValueError(f"{key} takes true or false")
        data = read_json(state / "desktop.json")
        data[key] = value
        write_private(state / "desktop.json", data)
