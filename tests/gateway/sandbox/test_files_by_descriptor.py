"""Files a run names are opened once, by descriptor, through no link; the gateway's own writes in a run's folders
follow no link; outbound files are per session. Real gateway processes, real bubblewrap, stand-in agent CLIs that
attack as a prompt-injected agent holding its run token would (issue #51, "Files").

- ``swapping_cli.py`` swaps a folder of its workspace with a symlink to the state dir (``renameat2`` with
  ``RENAME_EXCHANGE``, in a loop) while it asks ``message.sendAttachment`` for a file in that folder 400 times.
- ``planting_cli.py`` plants symlinks at the per-run files (``.remoteclaw/``, ``mcp.json``, ``AGENTS.md``,
  ``GEMINI.md``) during its turn, aimed at folders it cannot see.
- A stranger's run guesses the owner's turn diff (``<state>/outbound/diffs/...``).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import SUPPORT
from tests.support.gateway_proc import GatewayProcess
from tests.support.gitrepo import make_repo
from tests.support.ws import operator

GATEWAY_EXEC = True
READ_WRITE = ["operator.read", "operator.write"]
SWAP = str(SUPPORT / "swapping_cli.py")
PLANT = str(SUPPORT / "planting_cli.py")
PRY = str(SUPPORT / "prying_cli.py")

pytestmark = [pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed"),
              pytest.mark.timeout(240)]


def victims(d: Path) -> dict[str, Path]:
    """Folders and files outside every run's sight, each with a file in the shape a per-run file would take."""
    out = {name: d / "victims" / name for name in ("claude", "codex", "gemini", "planted")}
    for path in out.values():
        path.mkdir(parents=True)
    (out["claude"] / "mcp.json").write_text("the victim's own mcp.json")
    (out["codex"] / "codex-home").mkdir()
    (out["codex"] / "codex-home" / "config.toml").write_text("the victim's own config.toml")
    (out["gemini"] / "settings.json").write_text("the victim's own settings.json")
    (out["planted"] / "notes.txt").write_text("the victim's notes")
    return out


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    d = tmp_path_factory.mktemp("by-descriptor")
    repo = make_repo(d / "svc", {"app.py": "print('hi')\n", "AGENTS.md": "the project's rules\n",
                                 "GEMINI.md": "the project's gemini rules\n"})
    v = victims(d)
    state = d / "state"
    plans = {"plant": [[".remoteclaw", str(v["claude"])]],
             "codex": [["AGENTS.md", str(state / ".agents-old")], [".remoteclaw", str(v["codex"])]],
             "gemini": [["GEMINI.md", str(state / ".gemini-old")], [".gemini", str(v["gemini"])]],
             "quiet": [], "quiet-codex": []}
    runtimes = {"codex": "codex", "gemini": "gemini", "quiet-codex": "codex"}
    project = [{"name": "svc", "path": str(repo)}]
    agents: list[dict[str, Any]] = [{"id": "swap", "command": [sys.executable, SWAP]},
                                    {"id": "main", "command": [sys.executable, PRY], "projects": project}]
    agents += [{"id": name, "runtime": runtimes.get(name, "claude"), "command": [sys.executable, PLANT],
                "env": {"PLANT_PLAN": json.dumps(plan)}, "projects": project} for name, plan in plans.items()]
    proc = GatewayProcess(state, config={"agents": {"list": agents}})
    proc.start()
    yield proc
    proc.stop()


async def turn(gw: GatewayProcess, key: str, ask: dict[str, Any], *, owner: bool,
               project: str | None = None) -> dict[str, Any]:
    """One turn of the stand-in in session ``key``; the finished run (``agent.wait``)."""
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"] if owner else READ_WRITE)
    try:
        if project is not None:
            await c.call("sessions.patch", {"key": key})  # a new session, then its project
            await c.call("sessions.project", {"sessionKey": key, "project": project})
        res = await c.call("chat.send", {"sessionKey": key, "message": json.dumps(ask),
                                         "idempotencyKey": str(uuid.uuid4())})
        return dict(await c.call("agent.wait", {"runId": res["runId"], "timeoutMs": 180000}, timeout=200))
    finally:
        await c.close()


def webchat_files(gw: GatewayProcess, key: str) -> list[bytes]:
    """What the web chat stored for ``key``: the bytes its viewers are served."""
    with sqlite3.connect(gw.state_dir / "remoteclaw.db") as db:
        return [bytes(r[0]) for r in db.execute("select data from webchat_files where session_key = ?", (key,))]


async def test_a_folder_swapped_for_a_link_mid_send_never_sends_the_state_dir(gw: GatewayProcess) -> None:
    """400 sends while the run swaps ``box/`` with a link to the state dir: only the decoy ever leaves."""
    key = f"agent:swap:race-{uuid.uuid4().hex[:6]}"
    done = await turn(gw, key, {"target": str(gw.state_dir), "name": "remoteclaw.json", "tries": 400,
                                "send": {"channel": "webchat", "to": key}}, owner=False)
    assert done["status"] == "ok", done
    got = json.loads(done["reply"])
    sent = webchat_files(gw, key)
    leaks = [data for data in sent if data != b"decoy"]
    assert got["swaps"] > 1000 and got["ok"] == len(sent), got  # the race ran, every answered send was stored
    assert got["ok"] > 0, got  # the decoy does go: a test that cannot fail proves nothing
    assert leaks == [], f"{len(leaks)} of 400 sends leaked the state dir: {leaks[0][:80]!r}"


def project_of(gw: GatewayProcess) -> Path:
    return gw.state_dir.parent / "svc"


def victim(gw: GatewayProcess, name: str) -> Path:
    return gw.state_dir.parent / "victims" / name


def clean_project(gw: GatewayProcess) -> None:
    """Undo what a planting run left (its links, the names it moved aside), as the project's owner would."""
    repo = project_of(gw)
    for name in (".remoteclaw", ".gemini", "AGENTS.md", "GEMINI.md"):
        path = repo / name
        if path.is_symlink():
            path.unlink()
        moved = repo / (name + ".moved")
        if moved.is_symlink() or moved.is_file():
            moved.unlink()
        elif moved.is_dir():
            shutil.rmtree(moved)
    (repo / "AGENTS.md").write_text("the project's rules\n")
    (repo / "GEMINI.md").write_text("the project's gemini rules\n")


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file below ``folder``: its bytes and when it was last written."""
    return {str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(("agent", "victim_name", "instructions", "leaked"), [
    ("plant", "claude", None, None),
    ("codex", "codex", "AGENTS.md", ".agents-old"),
    ("gemini", "gemini", "GEMINI.md", ".gemini-old"),
])
async def test_links_planted_at_the_per_run_files_mid_turn_are_never_followed(
        gw: GatewayProcess, agent: str, victim_name: str, instructions: str | None, leaked: str | None) -> None:
    """The run swaps ``.remoteclaw/`` (``mcp.json``, Codex's ``config.toml``), ``.gemini/`` and the instruction files
    for links to folders it cannot see: restoring them after the turn writes and deletes nothing out there."""
    clean_project(gw)
    before = snapshot(victim(gw, victim_name))
    done = await turn(gw, f"agent:{agent}:plant-{uuid.uuid4().hex[:6]}", {}, owner=True, project="svc")
    assert done["status"] in ("ok", "error"), done
    assert snapshot(victim(gw, victim_name)) == before  # nothing deleted, written or touched outside the run's folder
    if leaked is not None:
        assert not (gw.state_dir / leaked).exists(), (gw.state_dir / leaked).read_text()
    if instructions is not None:  # the project's own file is given back as it was, a file again
        path = project_of(gw) / instructions
        assert not path.is_symlink() and path.read_text().startswith("the project's"), path
    clean_project(gw)


@pytest.mark.parametrize(("agent", "name"), [("quiet", ".remoteclaw"), ("quiet-codex", "AGENTS.md")])
async def test_links_left_at_the_per_run_files_before_a_turn_are_not_written_through(
        gw: GatewayProcess, agent: str, name: str) -> None:
    """An earlier run left ``.remoteclaw`` or ``AGENTS.md`` as a link to a folder or file it cannot see: the next
    turn neither reads, writes nor removes anything there, and it still runs (or fails with a clear message)."""
    clean_project(gw)
    planted = victim(gw, "planted")
    target = planted if name == ".remoteclaw" else planted / "notes.txt"
    (project_of(gw) / name).unlink(missing_ok=True)
    (project_of(gw) / name).symlink_to(target)
    before = snapshot(planted)
    done = await turn(gw, f"agent:{agent}:left-{uuid.uuid4().hex[:6]}", {}, owner=True, project="svc")
    assert snapshot(planted) == before, done
    if name == ".remoteclaw":  # refused, saying why (the project's owner removes the link)
        assert done["status"] == "error" and "not a directory owned by this user" in done["error"], done
    else:
        assert done["status"] in ("ok", "error") and "the victim's notes" not in json.dumps(done), done
    clean_project(gw)


def found_in(done: dict[str, Any]) -> dict[str, Any]:
    """The prying agent's answer (a turn that changed a project ends with its diff after it)."""
    assert done["status"] == "ok", done
    found, _ = json.JSONDecoder().raw_decode(done["reply"])
    return dict(found)


async def test_another_sessions_run_cannot_send_the_owners_diff(gw: GatewayProcess) -> None:
    """The owner's turn changes the project and its diff is kept; a stranger's run that names it (found or
    guessed) is refused, while the owner's own run still sends it."""
    clean_project(gw)
    owner_key = f"agent:main:owner-{uuid.uuid4().hex[:6]}"
    app = project_of(gw) / "app.py"
    found_in(await turn(gw, owner_key, {"write": [str(app)]}, owner=True, project="svc"))
    from gateway.projects.workdir import session_slug

    slug = session_slug(owner_key)
    diffs = [p for p in (gw.state_dir / "outbound" / "diffs").rglob("*.diff") if slug in p.name]
    assert len(diffs) == 1, diffs
    ours = diffs[0]
    assert "pwned" in ours.read_text()  # the owner's change is in it
    guessed = gw.state_dir / "outbound" / "diffs" / slug / f"{slug}-1.diff"  # where diffs were kept before
    stranger = f"agent:main:guess-{uuid.uuid4().hex[:6]}"
    target = {"channel": "webchat", "to": stranger}
    for path in (ours, guessed):
        got = found_in(await turn(gw, stranger, {"calls": [["message.sendAttachment", {**target, "file": str(path)}]]},
                                  owner=False))
        assert "outside what this agent run can see" in got["calls"]["message.sendAttachment"], got["calls"]
    assert webchat_files(gw, stranger) == []
    mine = found_in(await turn(gw, owner_key, {"calls": [["message.sendAttachment", {
        "channel": "webchat", "to": owner_key, "file": str(ours)}]]}, owner=True))
    assert mine["calls"]["message.sendAttachment"] == "ok", mine["calls"]
    assert any(b"pwned" in data for data in webchat_files(gw, owner_key))
    git_restore(project_of(gw))


def git_restore(repo: Path) -> None:
    import subprocess

    subprocess.run(["git", "checkout", "--", "app.py"], cwd=repo, check=True, capture_output=True)
