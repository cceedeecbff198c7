"""Installable without the clone: a wheel built from this tree goes into a clean virtual environment (as pipx or
``uv tool install`` would put it), and ``remoteclaw gateway run`` from there migrates a new database, serves the
web chat and answers; its advice (doctor, a stopped gateway) names commands for that installation, not the
clone's."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.gateway_proc import ROOT, free_port

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The venv's ``bin`` folder, with remoteclaw installed from a freshly built wheel and nothing else of ours."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"  # build from a copy of the tracked files, so the tree under test gets no build/ dir
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        target = source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / name).is_file():
            shutil.copy2(ROOT / name, target)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(work / "dist"), str(source)],
                   check=True, timeout=300)
    (wheel,) = (work / "dist").glob("remoteclaw-*.whl")
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    str(wheel)], check=True, timeout=540)
    yield venv / "bin"


def env_for(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REMOTECLAW_", "PYTHON", "VIRTUAL_ENV"))}
    env["HOME"] = str(home)  # a new user: the state dir is ~/.remoteclaw
    env["PATH"] = "/usr/bin:/bin"  # the venv is not on PATH: advice must name the full path
    return env


def test_the_wheel_runs_the_gateway_which_migrates_serves_the_web_chat_and_answers(
        installed: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = env_for(home)
    outside = tmp_path / "elsewhere"  # not the clone: nothing may come from the source tree
    outside.mkdir()
    found = subprocess.run([str(installed / "python"), "-c", "import gateway, sys; print(gateway.__file__)"],
                           cwd=outside, env=env, capture_output=True, text=True, check=True)
    assert str(ROOT) not in found.stdout and "site-packages" in found.stdout

    port = free_port()
    log = (tmp_path / "gateway.log").open("wb")
    proc = subprocess.Popen([str(installed / "remoteclaw"), "gateway", "run", "--port", str(port)], cwd=outside,
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        def health() -> dict[str, object] | None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
                    return dict(json.loads(r.read()))
            except OSError:
                return None

        assert until_sync(health, 60)["ok"] is True
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as page:
            body = page.read().decode()
        assert "<title>remoteclaw</title>" in body and 'id="composer"' in body  # the web chat, with its script
        state = home / ".remoteclaw"
        banner = (tmp_path / "gateway.log").read_text()
        assert f"web chat: http://localhost:{port}/#token=" in banner
        with sqlite3.connect(state / "remoteclaw.db") as db:  # migrated to the newest revision
            assert db.execute("SELECT count(*) FROM alembic_version").fetchone()[0] >= 1
        called = subprocess.run([str(installed / "remoteclaw"), "gateway", "call", "sessions.list", "--json"],
                                cwd=outside, env=env, capture_output=True, text=True, timeout=60)
        assert called.returncode == 0, called.stderr
        assert json.loads(called.stdout)["sessions"] == []
        doctor = subprocess.run([str(installed / "remoteclaw"), "doctor", "--json"], cwd=outside, env=env,
                                capture_output=True, text=True, timeout=120)
        checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
        fix = checks["optional part matrix"]["fix"]
        assert fix == f"{installed / 'python'} -m pip install 'matrix-nio>=0.25' 'markdown-it-py>=3', then restart " \
                      "the gateway", fix  # into this venv, named library by library: no clone, no package index
        assert "scripts/" not in json.dumps(checks)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
    assert proc.returncode == 0
    stopped = subprocess.run([str(installed / "remoteclaw"), "gateway", "call", "health", "--url",
                              f"ws://127.0.0.1:{port}/"], cwd=outside, env=env, capture_output=True, text=True,
                             timeout=60)
    assert stopped.returncode == 1
    assert f"start it with: {installed / 'remoteclaw'} gateway run" in stopped.stderr, stopped.stderr


def until_sync(check: object, timeout: float) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()  # type: ignore[operator]
        if got:
            return got  # type: ignore[no-any-return]
        time.sleep(0.2)
    raise AssertionError("the gateway did not answer /healthz")

