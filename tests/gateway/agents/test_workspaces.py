"""Agent workspaces live in the shared temp dir: their parent must be private to the gateway's user.

The workspace holds the run's MCP config (with the run's token). Another local user who could
write in ``<tmp>/remoteclaw-runs`` could swap a workspace for a directory of their own.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
import uuid
from pathlib import Path

from tests.support import FAKE_CLI
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import operator


def gateway(tmp: Path, name: str = "gw") -> GatewayProcess:
    cfg = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]}}
    return GatewayProcess(tmp / name, config=cfg, env={"TMPDIR": str(tmp / "t"),
                                                        "FAKE_CLI_LOG": str(tmp / f"{name}.cli.log")})


async def turn(gw: GatewayProcess, key: str, message: str = "hi") -> dict:
    c = await operator(gw.url, gw.token or "")
    res = await c.call("chat.send", {"sessionKey": key, "message": message, "idempotencyKey": str(uuid.uuid4())})
    done = await c.call("agent.wait", {"runId": res["runId"], "timeoutMs": 20000})
    await c.close()
    return done


async def run(tmp: Path, key: str) -> dict:
    with gateway(tmp) as gw:
        return await turn(gw, key)


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


async def test_two_gateways_on_one_machine_never_share_a_workspace(tmp_path: Path) -> None:
    key = "agent:main:main"  # the same session key on both
    (tmp_path / "t").mkdir()
    with gateway(tmp_path, "a") as a, gateway(tmp_path, "b") as b:
        done = await asyncio.gather(turn(a, key, "sleep:0.5 from a"), turn(b, key, "sleep:0.5 from b"))
    assert [d["status"] for d in done] == ["ok", "ok"], done
    seen = [json.loads((tmp_path / f"{n}.cli.log").read_text().splitlines()[-1]) for n in ("a", "b")]
    cwd_a, cwd_b = (Path(s["cwd"]) for s in seen)
    assert cwd_a != cwd_b and cwd_a.parent != cwd_b.parent
    assert all(p.is_relative_to(tmp_path / "t" / "remoteclaw-runs") for p in (cwd_a, cwd_b)), (cwd_a, cwd_b)
