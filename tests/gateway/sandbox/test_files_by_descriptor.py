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


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    d = tmp_path_factory.mktemp("by-descriptor")
    repo = make_repo(d / "svc", {"app.py": "print('hi')\n", "AGENTS.md": "the project's rules\n",
                                 "GEMINI.md": "the project's gemini rules\n"})
    (d / "victim").mkdir()
    project = [{"name": "svc", "path": str(repo)}]
    agents = [{"id": "swap", "command": [sys.executable, SWAP]},
              {"id": "plant", "command": [sys.executable, PLANT], "projects": project},
              {"id": "codex", "runtime": "codex", "command": [sys.executable, PLANT], "projects": project},
              {"id": "gemini", "runtime": "gemini", "command": [sys.executable, PLANT], "projects": project},
              {"id": "main", "command": [sys.executable, PRY], "projects": project}]
    proc = GatewayProcess(d / "state", config={"agents": {"list": agents}})
    proc.start()
    yield proc
    proc.stop()


async def turn(gw: GatewayProcess, key: str, ask: dict[str, Any], *, owner: bool,
               project: str | None = None) -> dict[str, Any]:
    """One turn of the stand-in in session ``key``; the finished run (``agent.wait``)."""
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"] if owner else READ_WRITE)
    try:
        if project is not None:
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
