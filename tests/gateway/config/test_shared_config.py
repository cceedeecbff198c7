"""Replicas on one PostgreSQL database run one config (``gateway.config.shared``), and say when they are ready.

Two real gateway processes, each with its own state dir and its own config file, on the real PostgreSQL: the
second adopts the config the first seeded (its own file is rewritten to mirror it), a ``config.patch`` on either
reaches the other within a second or two, each keeps its own ``gateway`` section, and a file edited while its
gateway was stopped is published at the next start. ``/readyz`` is 503 while Redis is unreachable, ``/healthz``
stays 200.
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.support import FAKE_CLI
from tests.support.gateway_proc import GatewayProcess, free_port
from tests.support.postgres import pg_url  # noqa: F401  (fixture)
from tests.support.waiting import until
from tests.support.ws import operator

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(120)]
TOKEN = "shared-config-token-0123456789"


def agents(*ids: str) -> dict[str, Any]:
    return {"agents": {"list": [{"id": i, "command": [sys.executable, FAKE_CLI]} for i in ids]}}


def agent_ids(config: dict[str, Any]) -> list[str]:
    return [a["id"] for a in config["agents"]["list"]]


def get(url: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


async def test_a_patch_on_one_replica_is_seen_by_the_other(tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    env = {"REMOTECLAW_DATABASE_URL": pg_url}
    a = GatewayProcess(tmp_path / "a", config={**agents("main"), "session": {"dmScope": "per-peer"}},
                       env=env, token=TOKEN)
    # b's own file names another agent: the deployment's config (seeded by a, first) wins over it.
    own = {"agents": {**agents("other")["agents"], "default": "other"}, "gateway": {"tickIntervalMs": 20000}}
    b = GatewayProcess(tmp_path / "b", config=own, env=env, token=TOKEN)
    with a.start(30), b.start(30):
        ca, cb = await operator(a.url, TOKEN), await operator(b.url, TOKEN)
        try:
            got_b = await cb.call("config.get")
            assert agent_ids(got_b["config"]) == ["main"] and got_b["config"]["session"]["dmScope"] == "per-peer"
            assert got_b["config"]["gateway"]["tickIntervalMs"] == 20000  # its own section kept
            on_disk = json.loads((b.state_dir / "remoteclaw.json").read_text())
            assert agent_ids(on_disk) == ["main"]  # the file mirrors what runs

            got_a = await ca.call("config.get")
            await ca.call("config.patch", {"patch": agents("main", "second"), "baseHash": got_a["hash"]})
            await until(lambda: agent_ids(json.loads((b.state_dir / "remoteclaw.json").read_text()))
                        == ["main", "second"], timeout=10)
            assert agent_ids((await cb.call("config.get"))["config"]) == ["main", "second"]

            # and back the other way, from b
            got_b = await cb.call("config.get")
            await cb.call("config.patch", {"patch": {"session": {"dmScope": "per-channel-peer"}},
                                           "baseHash": got_b["hash"]})
            async def a_has_it() -> bool:
                return (await ca.call("config.get"))["config"]["session"]["dmScope"] == "per-channel-peer"
            await until(a_has_it, timeout=10)
            assert (await ca.call("config.get"))["config"]["gateway"]["tickIntervalMs"] != 20000
        finally:
            await ca.close()
            await cb.close()

    # An edit of a's file while every replica is stopped is published when a starts again: b then runs it.
    data = json.loads((a.state_dir / "remoteclaw.json").read_text())
    data["agents"]["list"].append({"id": "third", "command": [sys.executable, FAKE_CLI]})
    (a.state_dir / "remoteclaw.json").write_text(json.dumps(data))
    with a.start(30), b.start(30):
        cb = await operator(b.url, TOKEN)
        try:
            assert agent_ids((await cb.call("config.get"))["config"]) == ["main", "second", "third"]
        finally:
            await cb.close()


async def test_readyz_is_503_while_redis_is_unreachable_and_healthz_stays_200(tmp_path: Path,
                                                                              pg_url: str) -> None:  # noqa: F811
    dead = free_port()  # nothing listens there
    with GatewayProcess(tmp_path / "gw", env={"REMOTECLAW_DATABASE_URL": pg_url,
                                              "REMOTECLAW_REDIS_URL": f"redis://127.0.0.1:{dead}/0"}).start(30) as gw:
        status, body = get(gw.http + "/readyz")
        assert status == 503 and not body["ready"]
        assert any("Redis unreachable" in r for r in body["reasons"]), body
        assert get(gw.http + "/healthz")[0] == 200

    with GatewayProcess(tmp_path / "ok", env={"REMOTECLAW_DATABASE_URL": pg_url}).start(30) as gw:
        status, body = get(gw.http + "/readyz")
        assert status == 200 and body["ready"] and body["database"] == "postgresql", body
