"""The sandbox holds against a prying agent: real gateway processes, real bubblewrap, no mocks.

The agent is ``prying_cli.py``: it reads whatever paths its prompt names, looks through ``/proc`` for other
processes and their environments, searches everything for the gateway's secrets and calls gateway methods with
its run's token, as a prompt-injected coding agent would with ``cat`` and its Read tool. It runs for the owner
(an operator with admin) and for a stranger (read/write only: the baseline tier), in each sandbox mode; with
``mode: off`` it finds what the sandbox hides, so these tests can fail.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import SUPPORT
from tests.support.gateway_proc import GatewayProcess
from tests.support.gitrepo import make_repo
from tests.support.ws import operator

PRY = str(SUPPORT / "prying_cli.py")
GATEWAY_EXEC = True
"""The agent looks for the gateway by its command line and its environment: both must be a real start's."""
SERVICE_SECRET = "svc-secret-" + uuid.uuid4().hex
"""In the gateway's environment under a name that looks secret: no agent run may see it."""
READ_WRITE = ["operator.read", "operator.write"]

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


def start(tmp: Path, *, env: dict[str, str] | None = None, command: list[str] | None = None,
          **sandbox: Any) -> GatewayProcess:
    project = tmp / "project"
    project.mkdir(parents=True, exist_ok=True)
    (project / "plan.txt").write_text("the owner's plan")
    agent = {"id": "main", "command": command or [sys.executable, PRY],
             "projects": [{"name": "plan", "path": str(project)}]}
    cfg = {"agents": {"list": [agent], "defaults": {"sandbox": sandbox}}}
    gw = GatewayProcess(tmp / "state", config=cfg, env={"SOME_SERVICE_TOKEN": SERVICE_SECRET, **(env or {})})
    return gw.start()


async def pry(gw: GatewayProcess, *, owner: bool, key: str | None = None, ok: bool = True,
              **ask: Any) -> dict[str, Any]:
    """One turn of the prying agent for the owner or a stranger; what it found (or the failed run)."""
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"] if owner else READ_WRITE)
    try:
        res = await c.call("chat.send", {"sessionKey": key or f"agent:main:pry:{uuid.uuid4().hex[:8]}",
                                         "message": json.dumps(ask), "idempotencyKey": str(uuid.uuid4())})
        done = await c.call("agent.wait", {"runId": res["runId"], "timeoutMs": 30000})
    finally:
        await c.close()
    if not ok:
        assert done["status"] == "error", done
        return done
    assert done["status"] == "ok", done
    found, _ = json.JSONDecoder().raw_decode(done["reply"])  # a turn that changed a project ends with its diff
    return dict(found)


def state_paths(gw: GatewayProcess) -> list[str]:
    s = gw.state_dir
    return [str(s / "remoteclaw.json"), str(s / "remoteclaw.db"), str(s / "remoteclaw.db-wal"),
            str(s / "stdout.log"), str(s / "logs")]


def state_hidden(found: dict[str, Any], gw: GatewayProcess) -> bool:
    """None of the state dir's files can be read, and its listing (when the run has the folders it was given
    inside it) shows nothing but those."""
    listing = readable_folder(found, str(gw.state_dir))
    return not any(found["read"][p] for p in state_paths(gw)) and set(listing) <= {"runtimes", "sandbox"}


def readable_folder(found: dict[str, Any], path: str) -> list[str]:
    got = found["read"].get(path)
    return got if isinstance(got, list) else []


def secrets_of(gw: GatewayProcess) -> list[str]:
    return [gw.token or "", SERVICE_SECRET]


def gateway_seen(found: dict[str, Any]) -> bool:
    return any("gateway.cli" in c and "gateway run" in c for c in found["cmdlines"])


def kept(path: str) -> str:
    with open(path) as fh:
        return fh.read()


def make_user(name: str) -> None:
    if subprocess.run(["id", "-u", name], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "--system", "--no-create-home", name], check=True)


def home_of(gw: GatewayProcess, key: str) -> Path:
    return gw.state_dir / "sandbox" / "homes" / "main" / hashlib.sha256(key.encode()).hexdigest()[:20]


@pytest.fixture(scope="module")
def sandboxed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    gw = start(tmp_path_factory.mktemp("sandbox-all"))  # the default: mode all, network open
    yield gw
    gw.stop()


async def test_an_owner_run_sees_its_projects_but_nothing_of_the_gateway(sandboxed: GatewayProcess) -> None:
    gw = sandboxed
    plan = str(gw.state_dir.parent / "project" / "plan.txt")
    paths = [str(gw.state_dir.parent), str(gw.state_dir), *state_paths(gw), plan, "/etc/shadow"]
    found = await pry(gw, owner=True, paths=paths, secrets=secrets_of(gw))
    assert found["read"][plan] is True  # the projects the config names
    assert state_hidden(found, gw), found["read"]
    assert found["read"]["/etc/shadow"] is False
    assert not gateway_seen(found) and found["leaked"] == []
    assert readable_folder(found, str(gw.state_dir.parent)) == ["project", "state"]  # a /tmp of its own
    assert found["env"]["IS_SANDBOX"] == "1" and "SOME_SERVICE_TOKEN" not in found["env"]


async def test_a_strangers_run_sees_only_its_own_session(sandboxed: GatewayProcess) -> None:
    gw = sandboxed
    plan = str(gw.state_dir.parent / "project" / "plan.txt")
    first, second = (f"agent:main:stranger:{uuid.uuid4().hex[:6]}" for _ in range(2))
    await pry(gw, owner=False, key=first, keep="first stranger's note")
    theirs = str(home_of(gw, first) / "kept.txt")
    assert kept(theirs) == "first stranger's note"  # kept on the gateway's disk, in the state dir
    found = await pry(gw, owner=False, key=second, paths=[str(gw.state_dir), *state_paths(gw), plan, theirs],
                      secrets=secrets_of(gw))
    assert state_hidden(found, gw) and not found["read"][plan] and not found["read"][theirs], found["read"]
    assert not gateway_seen(found) and found["leaked"] == []
    # Its HOME is a folder of its own, kept between its turns.
    again = await pry(gw, owner=False, key=first, paths=[str(Path.home() / "kept.txt")])
    assert again["read"][str(Path.home() / "kept.txt")] is True and again["home"] == str(Path.home())


async def test_a_run_cannot_make_the_gateway_send_what_it_cannot_see(sandboxed: GatewayProcess) -> None:
    """No confused deputy: the gateway reads a named file only inside what the run itself sees."""
    key = f"agent:main:deputy:{uuid.uuid4().hex[:6]}"
    target = {"channel": "webchat", "to": key}
    calls = [["message.sendAttachment", {**target, "file": "/etc/shadow"}],
             ["message.send", {**target, "message": "see", "media": str(sandboxed.state_dir / "remoteclaw.json")}]]
    for owner in (False, True):
        found = await pry(sandboxed, owner=owner, key=key, calls=calls)
        for method in ("message.sendAttachment", "message.send"):
            assert "outside what this agent run can see" in found["calls"][method], found["calls"]
    inside = await pry(sandboxed, owner=False, key=key,
                       calls=[["message.sendAttachment", {**target, "file": "missing.txt"}]])
    assert "outside" not in inside["calls"]["message.sendAttachment"]  # its own folder: only "not found"


async def test_a_run_in_a_project_cannot_plant_what_git_would_run_outside(tmp_path: Path) -> None:
    """The project is writable, its ``.git`` too (commits), but not ``.git/config`` (``core.fsmonitor``) nor
    ``.git/hooks``: git outside the sandbox (the gateway's diffs, the owner at the desk) would run them."""
    repo = make_repo(tmp_path / "project", {"README.md": "the owner's project\n"})  # the agent's project "plan"
    gw = start(tmp_path)
    key = "agent:main:project"
    git = repo / ".git"
    try:
        await pry(gw, owner=True, key=key)  # the session exists once it has had a turn
        c = await operator(gw.url, gw.token or "")
        try:
            await c.call("sessions.project", {"sessionKey": key, "project": "plan"})
        finally:
            await c.close()
        found = await pry(gw, owner=True, key=key, write=[str(repo / "notes.txt"), str(git / "description"),
                                                          str(git / "config"), str(git / "hooks" / "post-commit")])
    finally:
        gw.stop()
    wrote = found["wrote"]
    assert wrote[str(repo / "notes.txt")] and wrote[str(git / "description")], wrote  # its work goes on
    assert not wrote[str(git / "config")] and not wrote[str(git / "hooks" / "post-commit")], wrote
    assert not (git / "hooks" / "post-commit").exists()


async def test_with_the_sandbox_off_the_same_agent_finds_everything(tmp_path: Path) -> None:
    gw = start(tmp_path, mode="off")
    try:
        found = await pry(gw, owner=False, paths=state_paths(gw), secrets=secrets_of(gw))
    finally:
        gw.stop()
    assert all(found["read"][p] for p in state_paths(gw)[:2]), found["read"]
    assert gateway_seen(found) and gw.token in found["leaked"]
    assert "SOME_SERVICE_TOKEN" not in found["env"]  # its own environment never carries the gateway's secrets


async def test_mode_non_owner_confines_only_other_peoples_runs(tmp_path: Path) -> None:
    gw = start(tmp_path, mode="non-owner")
    try:
        owner = await pry(gw, owner=True, paths=state_paths(gw))
        stranger = await pry(gw, owner=False, paths=state_paths(gw))
    finally:
        gw.stop()
    assert owner["read"][str(gw.state_dir / "remoteclaw.json")] is True and gateway_seen(owner)
    assert not any(stranger["read"].values()) and not gateway_seen(stranger), stranger["read"]


async def test_network_none_reaches_the_gateway_through_its_socket_only(tmp_path: Path) -> None:
    gw = start(tmp_path, network="none")
    try:
        found = await pry(gw, owner=False, tcp=[["127.0.0.1", gw.port]],
                          calls=[["sessions.list", {}]])
    finally:
        gw.stop()
    assert found["tcp"] == {f"127.0.0.1:{gw.port}": False}  # no way out of its own network
    assert found["calls"] == {"sessions.list": "ok"}  # yet its tools work, through the bound socket
    assert found["env"]["REMOTECLAW_GATEWAY_SOCKET"].endswith("gateway.sock")


async def test_without_bubblewrap_a_strangers_run_is_refused_and_the_owners_runs(tmp_path: Path) -> None:
    gw = start(tmp_path, env={"REMOTECLAW_BWRAP": str(tmp_path / "no-bwrap")})
    try:
        refused = await pry(gw, owner=False, ok=False)
        owner = await pry(gw, owner=True, paths=[str(gw.state_dir / "remoteclaw.json")])
    finally:
        gw.stop()
    assert "cannot sandbox" in refused["error"] and "doctor" in refused["error"]
    assert owner["read"][str(gw.state_dir / "remoteclaw.json")] is True  # the owner's runs go on, warned


@pytest.mark.skipif(os.geteuid() != 0, reason="starting runs as another user needs root")
async def test_without_bubblewrap_a_user_of_its_own_keeps_the_state_out_of_reach() -> None:
    user = "rc-sandbox-test"
    make_user(user)
    system_python = shutil.which("python3", path="/usr/bin")  # one that user can run (not in /root)
    assert system_python is not None
    # Outside pytest's own 0700 folder: only the gateway's 0700 state dir stands between that user and it.
    root = Path(tempfile.mkdtemp(prefix="rc-user-sandbox-"))
    try:
        os.chmod(root, 0o755)
        pry_copy = root / "pry.py"
        shutil.copy(PRY, pry_copy)
        os.chmod(pry_copy, 0o755)
        gw = start(root / "gw", user=user, env={"REMOTECLAW_BWRAP": str(root / "no-bwrap")},
                   command=[system_python, str(pry_copy)])
        try:
            paths = [str(gw.state_dir), *state_paths(gw)]
            found = await pry(gw, owner=False, paths=paths, secrets=secrets_of(gw))
        finally:
            gw.stop()
        assert found["read"][str(gw.state_dir)] is False, found["read"]
        assert not any(found["read"][p] for p in state_paths(gw)), found["read"]
        assert found["leaked"] == [] and found["env"]["USER"] == user
    finally:
        shutil.rmtree(root, ignore_errors=True)
