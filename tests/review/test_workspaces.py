"""Agent workspaces live in the shared temp dir: their parent must be private to the gateway's user.

The workspace holds the run's MCP config (with the run's token). Another local user who could
write in ``<tmp>/remoteclaw-runs`` could swap a workspace for a directory of their own.
"""

from __future__ import annotations

import os
import stat
import sys
import uuid
from pathlib import Path

from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import operator

FAKE_CLI = str(Path(__file__).resolve().parents[1] / "support" / "fake_cli.py")


async def run(tmp: Path, key: str) -> dict:
    cfg = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]}}
    with GatewayProcess(tmp / "gw", config=cfg, env={"TMPDIR": str(tmp / "t")}) as gw:
        c = await operator(gw.url, gw.token or "")
        res = await c.call("chat.send", {"sessionKey": key, "message": "hi", "idempotencyKey": str(uuid.uuid4())})
        done = await c.call("agent.wait", {"runId": res["runId"], "timeoutMs": 20000})
        await c.close()
        return done


async def test_a_loose_runs_dir_is_made_private(tmp_path: Path) -> None:
    root = tmp_path / "t" / "remoteclaw-runs"
    root.mkdir(parents=True)
    os.chmod(root, 0o777)
    done = await run(tmp_path, "agent:main:ws:loose")
    assert done["status"] == "ok", done
    assert stat.S_IMODE(root.stat().st_mode) == 0o700


async def test_a_symlinked_runs_dir_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "remoteclaw-runs").symlink_to(elsewhere)
    done = await run(tmp_path, "agent:main:ws:link")
    assert done["status"] == "error" and "not a directory owned by this user" in done["error"]
    assert list(elsewhere.iterdir()) == []  # no workspace, no MCP config with a token
