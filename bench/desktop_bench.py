"""Desktop benchmark: an agent's ``get_window_state`` and click through the gateway and a node, against Cua Driver
called directly on the same machine.

Run on a quiet machine (not part of the tests)::

    .venv/bin/python bench/desktop_bench.py          # --calls 100; ~1 min

A real desktop session (Xvfb, D-Bus, AT-SPI, a zenity window: ``tests/support/desktop.py``), a gateway and our node
host (with ``cua-driver`` from PyPI) run as processes. Timed, each on the same window:

1. through remoteclaw: the real MCP shim of an owner run under the official MCP SDK client, ``tools/call
   desktop_get_window_state`` and ``desktop_click`` (a pixel click on the entry field), i.e. client -> shim ->
   gateway -> node -> cua-driver -> node -> gateway -> shim -> client;
2. ``cua-driver call <tool> '<json>' --socket S`` against a running ``cua-driver serve`` daemon (the driver's own
   command line; a process per call, as a script uses it);
3. for reference, the same tools over ``cua-driver mcp`` to the same SDK client (the driver with no process start).

The goal is remoteclaw's median at most 1.3 times the direct ``cua-driver call`` median.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import report  # noqa: E402
from tests.support.desktop import DesktopSession, driver_binary  # noqa: E402
from tests.support.gateway_proc import GatewayProcess  # noqa: E402
from tests.support.node_host import NodeHostProcess  # noqa: E402
from tests.support.ws import operator  # noqa: E402


async def _pair(admin: Any, name: str) -> None:
    for _ in range(200):
        pending = (await admin.call("node.pair.list", {}))["pending"]
        match = [p for p in pending if p["displayName"] == name]
        if match:
            await admin.call("node.pair.approve", {"requestId": match[0]["requestId"]})
            break
        await asyncio.sleep(0.1)
    for _ in range(200):
        if (await admin.call("desktop.tools.list", {}))["tools"]:
            return
        await asyncio.sleep(0.1)
    raise SystemExit("the desktop node never offered its tools")


def _header_token(text: str) -> str:
    """The element token of the list's "Item" column header in a ``get_window_state`` text: clicking it re-sorts
    the list (the dialog stays open)."""
    if text.lstrip().startswith("{"):  # ``cua-driver call`` prints the structured result as JSON
        import json

        data = json.loads(text)
        text = f"snapshot_id={data['snapshot_id']}\n{data['tree_markdown']}"
    sid = re.search(r"snapshot_id=(\w+)", text)
    row = re.search(r"\[(\d+)\] table column header \"Item\"", text)
    assert sid and row, text[:500]
    return f"{sid.group(1)}:{row.group(1)}"


async def _timed(calls: int, fn: Any) -> list[float]:
    out = []
    for _ in range(calls):
        began = time.perf_counter()
        await fn()
        out.append((time.perf_counter() - began) * 1000)
    return out


async def main(args: Any) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    figures: dict[str, Any] = {}
    binary = driver_binary()
    version = (await asyncio.to_thread(subprocess.run, [binary, "--version"], capture_output=True, text=True,
                                       check=False)).stdout.strip()
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}, {version or 'cua-driver'}")
    with tempfile.TemporaryDirectory(prefix="desktop-bench-") as tmp, DesktopSession(Path(tmp) / "desk") as desk:
        root = Path(tmp)
        # A list dialog: clicking its column header re-sorts it, so a click can repeat without closing it.
        zen = subprocess.Popen(["zenity", "--list", "--checklist", "--title", "Bench", "--column=Pick",  # noqa: ASYNC220
                                "--column=Item", "FALSE", "apple", "FALSE", "pear"], env=desk.env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with GatewayProcess(root / "gw") as gw:
            admin = await operator(gw.url, gw.token or "")
            node = NodeHostProcess(root / "node", gw.port, token=gw.token, name="bench-desk")
            node.extra_env = dict(desk.env)
            with node:
                await _pair(admin, "bench-desk")
                windows = []
                for _ in range(100):
                    got = await admin.call("desktop.invoke", {"tool": "list_windows", "arguments": {"pid": zen.pid}})
                    windows = got["structuredContent"]["windows"]
                    if windows:
                        break
                    await asyncio.sleep(0.1)
                wid = windows[0]["window_id"]
                state_args = {"pid": zen.pid, "window_id": wid}

                env = {k: v for k, v in os.environ.items() if not k.startswith("REMOTECLAW_")}
                env.update(REMOTECLAW_GATEWAY_URL=gw.url, REMOTECLAW_GATEWAY_TOKEN=gw.token or "",
                           REMOTECLAW_SESSION_KEY="agent:main:bench", REMOTECLAW_SENDER_IS_OWNER="true",
                           REMOTECLAW_SIDE_EFFECTS_FILE=str(root / "fx.ndjson"))
                shim = StdioServerParameters(command=sys.executable, args=["-m", "mcp_shim"], env=env, cwd=str(ROOT))
                async with Client(shim, mode="legacy") as client:
                    await client.list_tools()

                    async def shim_state() -> None:
                        r = await client.call_tool("desktop_get_window_state", state_args)
                        assert not r.is_error, r

                    async def shim_click() -> None:
                        r = await client.call_tool("desktop_click", click_args)
                        assert not r.is_error, r

                    await _timed(10, shim_state)
                    figures["remoteclaw_get_window_state"] = report.latency(await _timed(args.calls, shim_state))
                    # Xvfb has no window manager, so no pixel click lands (FIELD-NOTES §8): click by element token.
                    state = await client.call_tool("desktop_get_window_state", state_args)
                    click_args = {"pid": zen.pid, "element_token": _header_token(state.content[0].text)}
                    figures["remoteclaw_click"] = report.latency(await _timed(args.calls, shim_click))
            await admin.close()

        # Cua Driver on its own: its daemon and its command line, then its MCP server.
        socket = str(root / "cua.sock")
        daemon = subprocess.Popen([binary, "serve", "--socket", socket],  # noqa: ASYNC220
                                  env=desk.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(100):
                if os.path.exists(socket):  # noqa: ASYNC240
                    break
                await asyncio.sleep(0.1)
            import json

            async def cli(tool: str, arguments: dict[str, Any]) -> None:
                proc = await asyncio.create_subprocess_exec(
                    binary, "call", tool, json.dumps(arguments), "--socket", socket, env=desk.env,
                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
                out, err = await proc.communicate()
                assert proc.returncode == 0, (err + out[:600]).decode(errors="replace")

            await _timed(10, lambda: cli("get_window_state", state_args))
            figures["direct_call_get_window_state"] = report.latency(
                await _timed(args.calls, lambda: cli("get_window_state", state_args)))
            # One process per call: the element token must live in a named session to outlast its connection.
            proc = await asyncio.create_subprocess_exec(
                binary, "call", "get_window_state", json.dumps({**state_args, "session": "bench"}), "--socket", socket,
                env=desk.env,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
            out, _err = await proc.communicate()
            cli_click = {"pid": zen.pid, "element_token": _header_token(out.decode(errors="replace")),
                         "session": "bench"}
            figures["direct_call_click"] = report.latency(
                await _timed(args.calls, lambda: cli("click", cli_click)))
        finally:
            daemon.terminate()
            daemon.wait(10)
        async with Client(StdioServerParameters(command=binary, args=["mcp"], env=desk.env), mode="legacy") as mcp:
            async def mcp_state() -> None:
                await mcp.call_tool("get_window_state", state_args)

            async def mcp_click() -> None:
                await mcp.call_tool("click", click_args)

            await _timed(10, mcp_state)
            figures["driver_mcp_get_window_state"] = report.latency(await _timed(args.calls, mcp_state))
            fresh = await mcp.call_tool("get_window_state", state_args)
            click_args = {"pid": zen.pid, "element_token": _header_token(fresh.content[0].text)}
            figures["driver_mcp_click"] = report.latency(await _timed(args.calls, mcp_click))
        zen.terminate()

    for name in ("get_window_state", "click"):
        ours, direct = figures[f"remoteclaw_{name}"]["p50_ms"], figures[f"direct_call_{name}"]["p50_ms"]
        figures[f"ratio_{name}"] = round(ours / direct, 2)
        print(f"{name:17} remoteclaw p50 {ours:.1f} ms, cua-driver call p50 {direct:.1f} ms, "
              f"cua-driver mcp p50 {figures[f'driver_mcp_{name}']['p50_ms']:.1f} ms: ratio {ours / direct:.2f} "
              f"(goal <= 1.3)")
    report.write(args.json, figures)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=100)
    report.options(parser, {"calls": 10})
    asyncio.run(main(report.parse(parser)))
