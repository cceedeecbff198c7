"""A real desktop session for Cua Driver: Xvfb on a free display, a D-Bus session bus, the AT-SPI bus, zenity.

What FIELD-NOTES §8 established: ``Xvfb :N``, ``dbus-launch``, ``GTK_MODULES=gail:atk-bridge``,
``/usr/libexec/at-spi-bus-launcher --launch-immediately``, then a GTK app. ``DesktopSession.env`` is the
environment a node host (and ``cua-driver``) needs to reach all of it; ``zenity()`` opens a fresh entry dialog.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

__all__ = ["DesktopSession", "driver_binary", "require_desktop"]

ATSPI_LAUNCHER = "/usr/libexec/at-spi-bus-launcher"


def require_desktop() -> None:
    """Fail (never skip) when the Debian packages are missing: ``scripts/setup-tests`` installs them."""
    missing = [p for p, ok in (("xvfb", shutil.which("Xvfb")), ("dbus-x11", shutil.which("dbus-launch")),
                               ("zenity", shutil.which("zenity")), ("at-spi2-core", os.path.exists(ATSPI_LAUNCHER)))
               if not ok]
    assert not missing, f"missing Debian packages {missing}: run scripts/setup-tests"


def driver_binary() -> str:
    from nodes.desktop.probe import find_driver

    found, why = find_driver()
    assert found, why
    return found


def _free_display() -> int:
    for n in range(90, 400):
        if not Path(f"/tmp/.X11-unix/X{n}").exists() and not Path(f"/tmp/.X{n}-lock").exists():
            return n
    raise AssertionError("no free X display number")


class DesktopSession:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.procs: list[subprocess.Popen[bytes]] = []
        self.dbus_pid: int | None = None
        self.env: dict[str, str] = {}

    def start(self) -> DesktopSession:
        require_desktop()
        self.tmp.mkdir(parents=True, exist_ok=True)
        for _ in range(5):
            display = _free_display()
            xvfb = subprocess.Popen(["Xvfb", f":{display}", "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
                                    stdout=subprocess.DEVNULL, stderr=(self.tmp / "xvfb.log").open("ab"))
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and xvfb.poll() is None \
                    and not Path(f"/tmp/.X11-unix/X{display}").exists():
                time.sleep(0.05)
            if xvfb.poll() is None:
                self.procs.append(xvfb)
                break
        else:
            raise AssertionError("Xvfb did not start")
        env = {k: v for k, v in os.environ.items() if k not in ("WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS")}
        env.update(DISPLAY=f":{display}", GTK_MODULES="gail:atk-bridge", NO_AT_BRIDGE="0", HOME=str(self.tmp / "home"),
                   DO_NOT_TRACK="1")
        (self.tmp / "home").mkdir(exist_ok=True)
        out = subprocess.run(["dbus-launch", "--sh-syntax"], env=env, capture_output=True, text=True, check=True,
                             timeout=20).stdout
        for line in out.splitlines():
            name, _, value = line.partition("=")
            value = value.rstrip(";").strip("'")
            if name == "DBUS_SESSION_BUS_ADDRESS":
                env[name] = value
            elif name == "DBUS_SESSION_BUS_PID":
                self.dbus_pid = int(value)
        self.env = env
        self.procs.append(subprocess.Popen([ATSPI_LAUNCHER, "--launch-immediately"], env=env,
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(0.5)
        return self

    def zenity(self, title: str) -> subprocess.Popen[bytes]:
        """A fresh ``zenity --entry`` window (its answer on stdout when OK is clicked)."""
        proc = subprocess.Popen(["zenity", "--entry", "--text", "Your name", "--title", title], env=self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
        if self.dbus_pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.dbus_pid, signal.SIGTERM)

    def __enter__(self) -> DesktopSession:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
