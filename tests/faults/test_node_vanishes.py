"""A node host killed (SIGKILL) in the middle of a long ``node.invoke``: the caller is told at once.

What the caller sees: the invoke answers with an error saying the node disconnected within a few seconds of
the kill, not after the command's 60 s timeout; ``node.list`` shows the node disconnected. What is kept: the
pairing. The node host started again on the same state dir is connected without a new approval and takes
invokes again.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.faults.nodes import LONG, connected, node_row, pending, processes, system_run
from tests.support import FAKE_CLI
from tests.support.gateway_proc import GatewayProcess
from tests.support.node_host import NodeHostProcess
from tests.support.waiting import until
from tests.support.ws import RawClient, operator

pytestmark = [pytest.mark.timeout(90)]



async def test_a_node_killed_mid_invoke_fails_the_call_promptly_and_pairs_back_without_approval(
        tmp_path: Path) -> None:
    cfg = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]}}
    with GatewayProcess(tmp_path / "gw", config=cfg) as gw:
        admin = await operator(gw.url, gw.token or "")
        node = NodeHostProcess(tmp_path / "node", gw.port, token=gw.token, name="vanishing").start()
        try:
            request = await until(lambda: pending(admin, "vanishing"), 20, "the node's pairing request")
            await admin.call("node.pair.approve", {"requestId": request["requestId"]})
            node_id = str(request["nodeId"])
            assert node.approvals("add", "sleep").returncode == 0
            assert node.approvals("add", "echo").returncode == 0
            await until(lambda: connected(admin, "vanishing"), 20, "the approved node to connect")

            call = asyncio.create_task(admin.req("node.invoke", system_run(node_id, ["sleep", LONG]), timeout=60))
            await until(lambda: call.done() or processes(f"sleep {LONG}"), 15, "the node to start `sleep 30`")
            assert not call.done(), call.result()
            killed_at = time.monotonic()
            node.kill()
            answer = await call
            took = time.monotonic() - killed_at
            assert not answer["ok"], answer
            assert took < 5, f"the caller waited {took:.1f}s after the node died"
            assert answer["error"]["code"] == "UNAVAILABLE", answer
            assert "disconnect" in answer["error"]["message"].lower(), answer
            gone = await until(lambda: _disconnected(admin, "vanishing"), 10, "node.list to show it disconnected")
            assert gone["paired"] is True

            node.start()  # same state dir: its token is kept, so no new approval
            await until(lambda: connected(admin, "vanishing"), 20, "the node to come back")
            assert not [r for r in (await admin.call("node.pair.list"))["pending"] if r["displayName"] == "vanishing"]
            again = await admin.req("node.invoke", system_run(node_id, ["echo", "back"]), timeout=30)
            assert again["ok"], again
            assert again["payload"]["payload"]["stdout"] == "back\n"
            assert gw.proc is not None and gw.proc.poll() is None
        finally:
            node.stop()
            for pid in processes(f"sleep {LONG}"):  # the killed host's orphan
                os.kill(pid, signal.SIGKILL)
            await admin.close()


async def _disconnected(admin: RawClient, name: str) -> dict[str, Any] | None:
    found = await node_row(admin, name)
    return found if found and not found["connected"] else None
