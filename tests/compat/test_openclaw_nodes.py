"""Nodes across the two implementations, both ways, with OpenClaw's real npm package (scripts/install-openclaw).

- OpenClaw's headless node host pairs with our gateway, is approved with our CLI, and answers
  ``system.which`` through ``node_invoke`` called from the real MCP shim.
- Our node host pairs with OpenClaw's own gateway, is approved with OpenClaw's CLI, and answers
  ``system.which`` to ``openclaw nodes invoke``.

Without the package these fail rather than skip (``openclaw_paths``). Each side is a cold Node process that
takes a few seconds to start, so each test does one whole round trip.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from bench.targets import OpenClawTarget
from tests.mcp_shim.shim import Shim, shim_env
from tests.support.gateway_proc import ROOT, GatewayProcess
from tests.support.node_host import NodeHostProcess, OpenClawNodeHost
from tests.support.waiting import until
from tests.support.ws import operator

pytestmark = pytest.mark.timeout(240)


def remoteclaw(gw: GatewayProcess, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMOTECLAW_")}
    return subprocess.run([sys.executable, "-m", "gateway.cli", *args, "--url", gw.url, "--token", gw.token or ""],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False)


async def test_openclaw_node_host_pairs_with_our_gateway_and_answers_through_the_shim(
        fresh_gateway: GatewayProcess, tmp_path: Path) -> None:
    gw = fresh_gateway
    admin = await operator(gw.url, gw.token or "")
    with OpenClawNodeHost(tmp_path / "oc-home", gw.port, gw.token or "", name="oc-laptop"):
        async def request() -> dict[str, Any] | None:
            pending = (await admin.call("node.pair.list"))["pending"]
            return next((r for r in pending if r["displayName"] == "oc-laptop"), None)

        found = await until(request, 90, "a pairing request from OpenClaw's node host")
        assert "system.which" in found["commands"] and found["version"]
        listed = remoteclaw(gw, "nodes", "pending")
        assert listed.returncode == 0 and found["requestId"] in listed.stdout, listed.stderr
        approved = remoteclaw(gw, "nodes", "approve", found["requestId"])
        assert approved.returncode == 0, approved.stderr
        assert "approved: oc-laptop" in approved.stdout

        shim = await Shim.start(shim_env(gw, tmp_path))
        try:
            await shim.initialize()
            tools = {t["name"] for t in await shim.tools()}
            assert {"node_list", "node_invoke", "node_pair_approve"} <= tools

            async def answered() -> Any:
                result = await shim.call("node_invoke", {"nodeId": "oc-laptop", "command": "system.which",
                                                         "params": {"bins": ["sh"]}})
                return None if result.get("isError") else result

            result = await until(answered, 30, "OpenClaw's node to answer system.which")
            answer = json.loads(result["content"][0]["text"])
            assert answer["payload"] == {"bins": {"sh": "/usr/bin/sh"}}
            nodes = await shim.call("node_list", {})
            listed_nodes = json.loads(nodes["content"][0]["text"])["nodes"]
            assert [n["displayName"] for n in listed_nodes if n["connected"] and n["paired"]] == ["oc-laptop"]
        finally:
            await shim.close()
    await admin.close()


class OpenClawGateway(OpenClawTarget):
    """OpenClaw's own gateway (``openclaw gateway run``), offline, as the benchmarks launch it."""

    def start(self) -> OpenClawGateway:
        self.prepare()
        self.proc = self.launch(self.state / "stdout.log")
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=1):
                    return self
            except OSError:
                time.sleep(0.2)
        raise TimeoutError("OpenClaw's gateway did not come up")

    def cli(self, *args: str) -> tuple[int, Any, str]:
        proc = subprocess.run([str(self.node), str(self.entry), *args, "--url", self.url, "--token", self.token,
                               "--json"], env=self.env(), capture_output=True, text=True, timeout=90, check=False)
        try:
            out = json.loads(proc.stdout)
        except ValueError:
            out = None
        return proc.returncode, out, proc.stderr

    def stop(self) -> None:
        proc: subprocess.Popen[bytes] | None = getattr(self, "proc", None)
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, 15)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)


async def test_our_node_host_pairs_with_openclaws_gateway(tmp_path: Path) -> None:
    gateway = OpenClawGateway("openclaw", tmp_path / "oc").start()
    try:
        with NodeHostProcess(tmp_path / "node", gateway.port, token=gateway.token, name="py-node") as node:
            def pending() -> str | None:
                _code, out, _err = gateway.cli("nodes", "pending")
                rows = out if isinstance(out, list) else (out or {}).get("pending") or []
                return next((r["requestId"] for r in rows if r.get("displayName") == "py-node"), None)

            request_id = await until(pending, 60, "our node's pairing request at OpenClaw's gateway")
            code, _out, err = gateway.cli("nodes", "approve", request_id)
            assert code == 0, err

            def invoked() -> Any:
                code, out, _err = gateway.cli("nodes", "invoke", "--node", "py-node", "--command", "system.which",
                                              "--params", json.dumps({"bins": ["sh"]}))
                return out if code == 0 else None

            out = await until(invoked, 60, "our node to answer OpenClaw's system.which")
            assert out["payload"] == {"bins": {"sh": "/usr/bin/sh"}}, out
            assert "connected to" in node.output()
    finally:
        gateway.stop()
