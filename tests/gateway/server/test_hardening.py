"""Attacks from the same machine, against real gateway processes over loopback (issue: hardening).

Each test reproduces one finding: a stranger's frames and sockets are bounded (RSS measured), a browser
page from another origin is refused, an emptied config file changes nothing, and the token stays put.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.support import ROOT
from tests.support.gateway_proc import GatewayProcess, free_port
from tests.support.ws import operator

CONFIGURED_TOKEN = "configured-token-" + "x" * 24


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def upgrade(port: int, *, origin: str | None = None) -> socket.socket:
    """A raw WebSocket upgrade on ``/`` (what a stranger or a browser does), returning the open socket."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    key = base64.b64encode(os.urandom(16)).decode()
    head = (f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n")
    if origin:
        head += f"Origin: {origin}\r\n"
    sock.sendall((head + "\r\n").encode())
    return sock


def status_of(sock: socket.socket) -> int:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return int(data.split(b" ", 2)[1])


def frame_header(length: int) -> bytes:
    """A masked text frame header announcing ``length`` bytes of payload."""
    return bytes([0x81, 0x80 | 127]) + length.to_bytes(8, "big") + os.urandom(4)


async def test_strangers_big_frames_are_refused_from_their_header_and_memory_stays_bounded(
        gateway: GatewayProcess) -> None:
    assert gateway.proc is not None
    before = rss_mb(gateway.proc.pid)
    socks = []
    for _ in range(40):
        sock = upgrade(gateway.port)
        assert status_of(sock) == 101
        sock.sendall(frame_header(24 * 1024 * 1024))
        socks.append(sock)

    def stream() -> int:
        """Keep sending the announced payload; count the sockets the gateway shut."""
        closed = 0
        chunk = os.urandom(256 * 1024)
        for sock in socks:
            try:
                for _ in range(16):  # 4 MiB each, if the gateway were still reading
                    sock.sendall(chunk)
            except OSError:
                closed += 1
        return closed

    refused = await asyncio.to_thread(stream)
    await asyncio.sleep(0.5)
    grown = rss_mb(gateway.proc.pid) - before
    for sock in socks:
        sock.close()
    assert grown < 40, f"RSS grew {grown:.0f} MB under 40 strangers announcing 24 MiB frames"
    assert refused == len(socks), f"only {refused} of {len(socks)} were cut off"
    client = await operator(gateway.url, gateway.token or "")  # and everyone else is still served
    assert (await client.call("health"))["ok"] is True
    # After login the full limit applies: a 1 MiB frame is fine.
    reply = await client.req("chat.history", {"sessionKey": "main", "limit": 1, "note": "x" * (1 << 20)})
    assert reply["error"]["code"] == "INVALID_REQUEST" and "note" in reply["error"]["message"]  # not its size
    await client.close()


async def test_the_oldest_waiting_strangers_make_room_for_newcomers(tmp_path: Path) -> None:
    config = {"gateway": {"maxUnauthenticatedPerAddress": 4, "maxUnauthenticated": 8}}
    with GatewayProcess(tmp_path / "gw", config=config) as gw:
        idle = []
        for _ in range(10):  # strangers that upgrade and then say nothing
            sock = upgrade(gw.port)
            assert status_of(sock) == 101
            idle.append(sock)
        await asyncio.sleep(0.3)

        def closed(sock: socket.socket) -> bool:
            """Whether the gateway sent this socket its close frame (after the challenge)."""
            sock.settimeout(2)
            data = b""
            try:
                while b"waiting to log in" not in data:
                    chunk = sock.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            except (TimeoutError, OSError):
                pass
            return b"waiting to log in" in data

        dropped = [await asyncio.to_thread(closed, s) for s in idle]
        assert dropped == [True] * 6 + [False] * 4, dropped  # the six oldest went, the newest four wait on
        client = await operator(gw.url, gw.token or "")  # a real client still gets in at once
        assert (await client.call("health"))["ok"] is True
        await client.close()
        for sock in idle:
            sock.close()


async def test_browser_pages_from_other_origins_are_refused(tmp_path: Path) -> None:
    config = {"gateway": {"allowedOrigins": ["https://chat.example.org"]}}
    with GatewayProcess(tmp_path / "gw", config=config) as gw:
        for origin, expected in [("http://evil.example", 403), ("null", 403),
                                 (f"http://127.0.0.1:{gw.port}", 101), ("https://chat.example.org", 101),
                                 (None, 101)]:
            sock = upgrade(gw.port, origin=origin)
            assert status_of(sock) == expected, origin
            sock.close()
        import httpx

        async with httpx.AsyncClient() as http:
            page = await http.post(f"{gw.http}/channels/telegram/default/webhook",
                                   headers={"origin": "http://evil.example"}, json={})
            assert page.status_code == 403
            assert (await http.get(f"{gw.http}/healthz")).status_code == 200  # no Origin: not a browser


async def test_an_emptied_config_file_changes_nothing_and_the_token_stays(tmp_path: Path) -> None:
    config = {"gateway": {"auth": {"token": CONFIGURED_TOKEN}}, "logging": {"level": "info"}}
    with GatewayProcess(tmp_path / "gw", config=config, token=None) as gw:
        client = await operator(gw.url, CONFIGURED_TOKEN)
        before = await client.call("config.get")
        path = gw.state_dir / "remoteclaw.json"
        for text in ("", "  \n\t\n"):
            path.write_text(text)
            deadline = time.monotonic() + 5
            while True:
                got = await client.call("config.get")
                if not got["valid"]:
                    break
                assert time.monotonic() < deadline, "the emptied file was not noticed"
                await asyncio.sleep(0.1)
            assert "empty" in json.dumps(got["issues"])
            assert got["config"] == before["config"] and got["hash"] == before["hash"]
            fresh = await operator(gw.url, CONFIGURED_TOKEN)  # no restart with another token
            assert (await fresh.call("health"))["ok"] is True
            await fresh.close()
        await client.close()


def test_a_cold_start_on_an_empty_config_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "remoteclaw.json").write_text("\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMOTECLAW_")}
    env["REMOTECLAW_STATE_DIR"] = str(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "gateway.cli", "gateway", "run", "--port", str(free_port())],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=30)
    assert proc.returncode != 0
    assert "empty" in proc.stderr and "{}" in proc.stderr, proc.stderr


def test_the_token_is_printed_once_when_it_is_created(tmp_path: Path) -> None:
    gw = GatewayProcess(tmp_path / "gw", token=None)
    with gw:
        first = gw.output()
    assert f"#token={gw.token}" in first and "a new gateway token was written" in first
    with gw:
        again = gw.output()[len(first):]
    assert "listening on" in again and (gw.token or "-") not in again


def test_a_field_marked_secret_in_the_schema_is_hidden_whatever_its_name() -> None:
    from gateway.config.sections import Section, secret
    from gateway.redaction import REDACTED, redact, schema_secret_paths, secret_values

    class Inner(Section):
        hush: str | None = secret("a value that looks like nothing")

    class Outer(Section):
        plain: str = "shown"
        inner: Inner = Inner()
        many: dict[str, Inner] = {}

    paths = schema_secret_paths(Outer.model_json_schema())
    assert paths == {("inner", "hush"), ("many", "*", "hush")}
    data = {"plain": "shown", "inner": {"hush": "s1"}, "many": {"a": {"hush": "s2"}}}
    assert redact(data, paths) == {"plain": "shown", "inner": {"hush": REDACTED}, "many": {"a": {"hush": REDACTED}}}
    assert sorted(secret_values(data, paths)) == ["s1", "s2"]


async def test_secrets_in_open_sections_are_hidden_from_config_get_and_the_log(tmp_path: Path) -> None:
    key, sub = "sk-live-" + "k" * 20, "azure-" + "s" * 20
    config = {"messages": {"tts": {"openai": {"apiKey": key}, "azure": {"subscriptionKey": sub, "region": "west"}}},
              "logging": {"level": "debug"}}
    with GatewayProcess(tmp_path / "gw", config=config) as gw:
        client = await operator(gw.url, gw.token or "", scopes=["operator.read"])
        got = json.dumps(await client.call("config.get"))
        assert key not in got and sub not in got and "west" in got
        await client.call("config.get", {"key": "messages.tts"})
        await client.close()
        logged = "".join(p.read_text() for p in (gw.state_dir / "logs").glob("gateway.log*")) + gw.output()
        assert key not in logged and sub not in logged


async def test_a_retry_after_a_crash_gets_the_first_answer_and_the_session_is_free_at_once(tmp_path: Path) -> None:
    from tests.support import FAKE_CLI

    # No retry of the interrupted turn (recovery's job, tested elsewhere): the next turn may start at once.
    config = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}], "retryInterrupted": False}}
    env = {"REMOTECLAW_LEASE_TTL_MS": "120000"}  # were the lease waited out, the test would time out
    gw = GatewayProcess(tmp_path / "gw", config=config, env=env)
    with gw:
        client = await operator(gw.url, gw.token or "")
        send = {"sessionKey": "main", "message": "sleep:30", "idempotencyKey": "retry-me-1"}
        first = await client.call("chat.send", send)
        await client.next_event("agent", timeout=10)  # the turn is under way
        assert gw.proc is not None
        gw.proc.kill()  # kill -9: no clean-up of any kind
        gw.proc.wait()
        gw.proc = None
        gw.start()
        client = await operator(gw.url, gw.token or "")
        again = await client.call("chat.send", send)
        assert again["runId"] == first["runId"]
        history = await client.call("chat.history", {"sessionKey": "main", "limit": 50})
        users = [m for m in history["messages"] if m.get("role") == "user" and "sleep:30" in str(m)]
        assert len(users) == 1, history
        fresh = await client.call("chat.send", {"sessionKey": "main", "message": "hello", "idempotencyKey": "k2"})
        waited = await client.call("agent.wait", {"runId": fresh["runId"], "timeoutMs": 30_000}, timeout=40)
        assert waited["status"] == "ok", waited
        await client.close()


async def test_a_tool_call_in_flight_as_the_gateway_dies_is_retried_when_it_is_back(tmp_path: Path) -> None:
    """The shim's ``sessions_send`` is waiting (``agent.wait``) when the gateway is killed; the gateway comes
    back on the same port two seconds later, and the call completes instead of failing at once."""
    from tests.mcp_shim.shim import Shim, shim_env
    from tests.support import FAKE_CLI

    config = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}], "retryInterrupted": False}}
    gw = GatewayProcess(tmp_path / "gw", config=config)
    with gw:
        shim = await Shim.start(shim_env(gw, tmp_path))
        await shim.initialize()
        call = asyncio.create_task(shim.call("sessions_send", {"sessionKey": "agent:main:main",
                                                               "message": "sleep:20", "timeout": 30}, timeout=60))
        client = await operator(gw.url, gw.token or "")
        await client.next_event("agent", timeout=10)  # the turn started: the shim now waits on agent.wait
        await client.close()
        assert gw.proc is not None
        gw.proc.kill()
        gw.proc.wait()
        gw.proc = None
        await asyncio.sleep(2)
        await asyncio.to_thread(gw.start)
        result = await asyncio.wait_for(call, 60)
        text = result["content"][0]["text"]
        assert not result.get("isError"), text
        assert "interrupted" in text  # agent.wait, asked again, tells what became of the run
        await shim.close()
