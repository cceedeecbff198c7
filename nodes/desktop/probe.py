"""Whether this machine can offer the desktop: Cua Driver installed, a display, the accessibility bus.

The answer comes from Cua Driver itself where it can (``cua-driver doctor --json`` probes the display server,
the X11 connection and the AT-SPI bus in ~0.1 s), so the node and the driver never disagree about what is
there. Each missing part has its own reason, worded as what to do about it; ``remoteclaw node desktop show``
and the gateway's refusals quote it.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

__all__ = ["Probe", "find_driver", "probe", "probe_blocking"]

DOCTOR_TIMEOUT_S = 15.0
INSTALL_HINT = "pip install 'remoteclaw[desktop]' (the cua-driver package from PyPI)"


@dataclass(slots=True)
class Probe:
    """What was found. ``reason`` is None when the desktop can be offered."""

    driver: str | None = None
    version: str | None = None
    display: str | None = None
    accessibility: bool = False
    reason: str | None = None
    missing: str | None = None
    """``cua-driver``, ``display``, ``at-spi`` or ``disabled``: which part is missing (for tests and doctor)."""
    checks: list[dict[str, Any]] = field(default_factory=list)
    """Cua Driver's own doctor probes, as it reported them."""

    def describe(self) -> dict[str, Any]:
        return {"available": self.reason is None, "cuaDriver": self.driver, "version": self.version,
                "display": self.display, "accessibilityBus": self.accessibility, "missing": self.missing,
                "unavailableBecause": self.reason, "driverChecks": self.checks}


def find_driver(configured: str | None = None) -> tuple[str | None, str | None]:
    """The ``cua-driver`` executable: the node's ``driverPath`` setting, else the one bundled in the installed
    ``cua_driver`` wheel (no import: that would load its native library), else ``cua-driver`` on PATH."""
    if configured:
        path = Path(configured).expanduser()
        if path.is_file() and os.access(path, os.X_OK):
            return str(path), None
        return None, f"cua-driver is not at {path} (the node's desktop setting driverPath)"
    spec = importlib.util.find_spec("cua_driver")
    if spec is not None and spec.origin:
        bundled = Path(spec.origin).parent / "bin" / "cua-driver"
        if bundled.is_file():
            if not os.access(bundled, os.X_OK):
                bundled.chmod(0o755)  # what the wheel's own wrapper does on first use
            return str(bundled), None
    found = shutil.which("cua-driver")
    if found:
        return found, None
    return None, f"cua-driver is not installed: {INSTALL_HINT}"


def _display(env: dict[str, str]) -> str | None:
    return env.get("DISPLAY") or env.get("WAYLAND_DISPLAY") or None


def _judge(found: Probe, report: Any) -> Probe:
    """Read Cua Driver's doctor report into ``found``: the display, the X11 connection, the AT-SPI bus."""
    probes = [p for p in report.get("probes") or [] if isinstance(p, dict)] if isinstance(report, dict) else []
    found.checks = [{k: p.get(k) for k in ("label", "status", "message") if p.get(k) is not None} for p in probes]
    by_label = {str(p.get("label")): p for p in probes}
    build = report.get("build") if isinstance(report, dict) else None
    found.version = str(build.get("version") or "") or None if isinstance(build, dict) else None
    display = by_label.get("display server", {})
    x11 = by_label.get("X11 connection", {})
    atspi = by_label.get("AT-SPI", {})
    found.accessibility = atspi.get("status") == "ok"
    if found.display is None or display.get("status") not in (None, "ok"):
        found.reason = ("no display: the node runs outside a graphical session (DISPLAY and WAYLAND_DISPLAY are "
                        f"unset or unusable: {display.get('message') or 'no display server'})")
        found.missing = "display"
    elif x11 and x11.get("status") != "ok" and "no top-level windows" not in str(x11.get("message")):
        found.reason = f"no display: {x11.get('message')}"
        found.missing = "display"
    elif not found.accessibility:
        found.reason = ("no AT-SPI bus: the accessibility bus is not reachable on the session bus "
                        f"({atspi.get('message') or 'not reported'}; install at-spi2-core, run the node inside the "
                        "desktop session with D-Bus, or start /usr/libexec/at-spi-bus-launcher)")
        found.missing = "at-spi"
    return found


async def probe(configured: str | None, env: dict[str, str]) -> Probe:
    """Find the driver and ask it what it can reach (with ``env``: the node's display and session bus)."""
    driver, why = find_driver(configured)
    if driver is None:
        return Probe(reason=why, missing="cua-driver", display=_display(env))
    found = Probe(driver=driver, display=_display(env))
    try:
        proc = await asyncio.create_subprocess_exec(driver, "doctor", "--json", stdin=asyncio.subprocess.DEVNULL,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                    env=env)
        out, _err = await asyncio.wait_for(proc.communicate(), DOCTOR_TIMEOUT_S)
        report = orjson.loads(out)
    except (OSError, TimeoutError, orjson.JSONDecodeError) as exc:
        found.reason, found.missing = f"cua-driver doctor failed: {exc or type(exc).__name__}", "cua-driver"
        return found
    return _judge(found, report)


def probe_blocking(configured: str | None, env: dict[str, str]) -> Probe:
    """``probe`` for callers without an event loop (``remoteclaw doctor``)."""
    driver, why = find_driver(configured)
    if driver is None:
        return Probe(reason=why, missing="cua-driver", display=_display(env))
    found = Probe(driver=driver, display=_display(env))
    try:
        done = subprocess.run([driver, "doctor", "--json"], stdin=subprocess.DEVNULL, capture_output=True, env=env,
                              timeout=DOCTOR_TIMEOUT_S, check=False)
        report = orjson.loads(done.stdout)
    except (OSError, subprocess.TimeoutExpired, orjson.JSONDecodeError) as exc:
        found.reason, found.missing = f"cua-driver doctor failed: {exc or type(exc).__name__}", "cua-driver"
        return found
    return _judge(found, report)
