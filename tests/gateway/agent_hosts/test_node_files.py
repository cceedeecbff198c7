"""Files in and out of agent turns that run on a node: the message's attachments copied into the turn's folder on
the node, and a file the agent on the node sends back read there (never on the gateway's disk).

A real gateway and a real node host process (its own HOME and state dir), the stand-in CLI
(``tests/support/fake_cli.py``) lent by the node; the assertions are on the node's folder while the turn runs,
what the CLI saw (its log, its answer), and the bytes the web chat serves.
"""

from __future__ import annotations

import base64
import json
import sys
import urllib.request
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.gateway.agent_hosts.test_node_turns import FAKE_CLI, node_cli, node_process, run_with_agents, wait
from tests.nodes.test_node_host import pair
from tests.support.gateway_proc import GatewayProcess
from tests.support.node_host import NodeHostProcess
from tests.support.waiting import until
from tests.support.ws import RawClient, operator

pytestmark = [pytest.mark.timeout(180)]

NODE = "workbench"
LIMIT = 64 * 1024
"""``nodes.agentFilesMaxBytes`` here: small, so a message over it is cheap to send."""


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("node-files")
    node_home = root / "node-home"
    code = node_home / "code"
    code.mkdir(parents=True)
    cfg = {"nodes": {"agentFilesMaxBytes": LIMIT},
           "agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]},
                               {"id": "remote", "node": NODE, "workspace": str(code)},
                               {"id": "private", "node": NODE}]}}
    with GatewayProcess(root / "gw", config=cfg, env={"FAKE_CLI_LOG": str(root / "local-cli.log")}) as gw:
        yield {"gw": gw, "root": root, "home": node_home, "code": code}


@pytest.fixture(scope="module")
async def node(world: dict[str, Any]) -> AsyncIterator[NodeHostProcess]:
    host = node_process(world)
    host.extra_env["FAKE_CLI_LOG"] = "cli.log"  # in the turn's folder: the lent one, or a private one (removed)
    host.state.mkdir(parents=True)
    assert node_cli(host, "agents", "set", "clis", f"claude={sys.executable} {FAKE_CLI}").returncode == 0
    assert node_cli(host, "agents", "set", "folders", str(world["code"])).returncode == 0
    gw: GatewayProcess = world["gw"]
    admin = await operator(gw.url, gw.token or "")
    run_with_agents(host)
    try:
        await pair(admin, host)
        yield host
    finally:
        await admin.close()
        host.stop()


def cli_log(world: dict[str, Any]) -> list[dict[str, Any]]:
    path: Path = world["code"] / "cli.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def upload(name: str, data: bytes, mime: str = "text/plain") -> dict[str, str]:
    return {"name": name, "mimeType": mime, "base64": base64.b64encode(data).decode()}


async def send(c: RawClient, key: str, message: str, attachments: list[dict[str, str]] | None = None) -> str:
    res = await c.call("chat.send", {"sessionKey": key, "message": message, "idempotencyKey": str(uuid.uuid4()),
                                     **({"attachments": attachments} if attachments else {})})
    return str(res["runId"])


async def sent_files(c: RawClient, key: str) -> list[dict[str, Any]]:
    """The files the agent posted to the web chat (its messages' attachments), oldest first."""
    history = await c.call("chat.history", {"sessionKey": key, "limit": 50})
    return [a for m in history["messages"] if m.get("role") == "assistant"
            for a in (m.get("attachments") or (m.get("meta") or {}).get("attachments") or [])]


def fetch(gw: GatewayProcess, url: str) -> bytes:
    req = urllib.request.Request(gw.http + url, headers={"Authorization": f"Bearer {gw.token}"})
    with urllib.request.urlopen(req, timeout=10) as res:
        return bytes(res.read())


async def test_an_attachment_reaches_the_turns_folder_on_the_node(world: dict[str, Any],
                                                                  node: NodeHostProcess) -> None:
    gw: GatewayProcess = world["gw"]
    code: Path = world["code"]
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
    try:
        data = b"quarterly numbers: 42\n"
        before = len(cli_log(world))
        run_id = await send(c, "agent:remote:main", "sleep:3 show attachments", [upload("numbers.txt", data)])
        # While the turn runs, the file is in the lent folder's .remoteclaw/attachments on the node, as a local
        # turn in a project has it.
        await until(lambda: len(cli_log(world)) > before, 30, "the CLI to start on the node")
        placed = list((code / ".remoteclaw" / "attachments").glob("*numbers.txt"))
        assert len(placed) == 1 and placed[0].read_bytes() == data, placed
        assert placed[0].stat().st_mode & 0o077 == 0
        done = await wait(c, run_id)
        assert done["status"] == "ok", done
        assert f"numbers.txt={data[:64]!r}" in done["reply"], done["reply"]  # the CLI read it there
        seen = cli_log(world)[-1]
        assert f"[attachment: file .remoteclaw/attachments/{placed[0].name}]" in seen["prompt"], seen["prompt"]
        assert not (code / ".remoteclaw" / "attachments").exists(), "the turn's attachments are gone after it"
        local = world["root"] / "local-cli.log"
        assert not local.exists() or not local.read_text(), "nothing ran on the gateway's side"

        # An agent with no workspace: its private folder on the node has them in attachments/, as a local one.
        image = b"\x89PNG\r\n\x1a\n" + bytes(range(40))
        run_id = await send(c, "agent:private:main", "sleep:3 show attachments",
                            [upload("../../etc/pic.png", image, "image/png")])
        runs = node.state / "agent-runs"
        found = await until(lambda: list(runs.glob("*/attachments/*pic.png")), 30, "the picture in the private folder")
        assert found[0].read_bytes() == image and found[0].parent.parent.parent == runs, found
        done = await wait(c, run_id)
        assert done["status"] == "ok", done
        assert "pic.png=" in done["reply"] and repr(image[:20])[2:-1] in done["reply"], done["reply"]
    finally:
        await c.close()


async def test_attachments_over_the_limit_get_a_clear_answer(world: dict[str, Any], node: NodeHostProcess) -> None:
    gw: GatewayProcess = world["gw"]
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
    try:
        before = len(cli_log(world))
        done = await wait(c, await send(c, "agent:remote:main", "show attachments",
                                        [upload("big.bin", b"x" * (LIMIT + 1), "application/octet-stream")]))
        assert done["status"] == "error", done
        assert "attachments" in done["error"] and NODE in done["error"] and "64 KB" in done["error"], done
        assert len(cli_log(world)) == before, "no turn started on the node"
        history = await c.call("chat.history", {"sessionKey": "agent:remote:main", "limit": 5})
        assert any("64 KB" in json.dumps(m) for m in history["messages"])
    finally:
        await c.close()


async def test_a_file_the_agent_on_the_node_sends_reaches_the_chat(world: dict[str, Any],
                                                                    node: NodeHostProcess) -> None:
    gw: GatewayProcess = world["gw"]
    code: Path = world["code"]
    key = "agent:remote:main"
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
    try:
        before = len(await sent_files(c, key))
        # The stand-in writes out/report.txt in its folder on the node, then sends it (a relative path, as the
        # agent sees its folder), through the shim on the node.
        ask = {"target": key, "file": "out/report.txt", "caption": "the report"}
        done = await wait(c, await send(c, key, f"edit:out/report.txt tool:message_send_attachment {json.dumps(ask)}"))
        assert done["status"] == "ok", done
        assert '"ok": true' in done["reply"], done["reply"]
        files = (await sent_files(c, key))[before:]
        assert [f["name"] for f in files] == ["report.txt"], files
        assert fetch(gw, files[0]["url"]) == b"line 1\nline 2\nline 3\n"  # the node's bytes
        # The same by the node's absolute path (message_send's media too).
        (code / "out" / "chart.txt").write_text("made on the node\n")
        ask = {"target": key, "message": "here", "media": str(code / "out" / "chart.txt")}
        done = await wait(c, await send(c, key, f"tool:message_send {json.dumps(ask)}"))
        assert done["status"] == "ok" and '"ok": true' in done["reply"], done
        files = (await sent_files(c, key))[before:]
        assert [f["name"] for f in files] == ["report.txt", "chart.txt"], files
        assert fetch(gw, files[1]["url"]) == b"made on the node\n"
    finally:
        await c.close()


async def test_a_node_run_naming_a_gateway_path_gets_nothing_of_it(world: dict[str, Any],
                                                                   node: NodeHostProcess) -> None:
    gw: GatewayProcess = world["gw"]
    code: Path = world["code"]
    key = "agent:remote:main"
    secret = gw.state_dir / "gateway-only.txt"
    secret.write_text("the gateway's own file\n")
    (code / "link.txt").unlink(missing_ok=True)
    (code / "link.txt").symlink_to(secret)  # a link in the run's own folder on the node, aimed at the gateway's
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
    try:
        before = len(await sent_files(c, key))
        for named, why in ((str(secret), "outside the turn's folder"),
                           (str(gw.state_dir / "remoteclaw.json"), "outside the turn's folder"),
                           ("link.txt", "symbolic link"), ("../../gw/gateway-only.txt", "outside the turn's folder")):
            ask = {"target": key, "file": named}
            done = await wait(c, await send(c, key, f"tool:message_send_attachment {json.dumps(ask)}"))
            assert done["status"] == "ok", done
            assert why in done["reply"], (named, done)
            assert '"ok": true' not in done["reply"] and "gateway's own file" not in done["reply"], (named, done)
        assert (await sent_files(c, key))[before:] == [], "nothing was sent"
    finally:
        (code / "link.txt").unlink(missing_ok=True)
        await c.close()


async def test_a_message_kept_while_the_node_is_away_brings_its_attachment_when_it_returns(
        world: dict[str, Any], node: NodeHostProcess) -> None:
    gw: GatewayProcess = world["gw"]
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
    try:
        node.stop()
        data = b"kept for the node's return\n"
        kept = await wait(c, await send(c, "agent:remote:main", "show attachments", [upload("later.txt", data)]))
        assert kept["status"] == "error" and "kept" in kept["error"], kept
        run_with_agents(node)

        async def answered() -> bool:
            history = await c.call("chat.history", {"sessionKey": "agent:remote:main", "limit": 10})
            return any(f"later.txt={data!r}" in json.dumps(m) or "later.txt=" in str(m.get("text") or "")
                       for m in history["messages"] if m.get("role") == "assistant")

        await until(answered, 60, "the kept message to run on the node with its attachment")
        seen = cli_log(world)[-1]
        assert "[attachment: file .remoteclaw/attachments/" in seen["prompt"] and "later.txt" in seen["prompt"]
    finally:
        await c.close()


def test_the_node_writes_attachments_only_inside_the_turns_folder_by_safe_names(tmp_path: Path) -> None:
    from nodes.agents.files import attachments_of, drop_attachments, place_attachments
    from nodes.errors import CommandError

    items = attachments_of({"attachments": [upload("../../outside.txt", b"a"), upload(".hidden", b"b"),
                                            upload("a b/c?.txt", b"c")]})
    assert [name for name, _ in items] == ["outside.txt", "hidden", "c_.txt"]
    lent = tmp_path / "code"
    lent.mkdir()
    place_attachments(lent, False, items)
    assert sorted(p.name for p in (lent / ".remoteclaw" / "attachments").iterdir()) == ["c_.txt", "hidden",
                                                                                         "outside.txt"]
    assert not (tmp_path / "outside.txt").exists()
    drop_attachments(lent)
    assert not (lent / ".remoteclaw" / "attachments").exists()
    # a .remoteclaw/ left as a link by a run before (aimed at a folder it cannot see) is never written through
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (lent / ".remoteclaw").rmdir()
    (lent / ".remoteclaw").symlink_to(elsewhere)
    with pytest.raises(CommandError, match="cannot be written"):
        place_attachments(lent, False, items)
    assert list(elsewhere.iterdir()) == []
    with pytest.raises(CommandError, match="base64"):
        attachments_of({"attachments": [{"name": "x", "base64": "not base64!"}]})


def test_the_node_reads_a_turns_file_only_inside_its_folder(tmp_path: Path) -> None:
    from nodes.agents.files import read_turn_file
    from nodes.errors import CommandError

    cwd = tmp_path / "turn"
    (cwd / "out").mkdir(parents=True)
    (cwd / "out" / "a.txt").write_bytes(b"hello")
    (tmp_path / "secret").write_text("not the turn's")
    (cwd / "link").symlink_to(tmp_path / "secret")
    got = read_turn_file(cwd, "out/a.txt", 100)
    assert base64.b64decode(got["base64"]) == b"hello" and got["name"] == "a.txt"
    assert read_turn_file(cwd, str(cwd / "out" / "a.txt"), 100)["size"] == 5
    for path, why in (("../secret", "outside"), (str(tmp_path / "secret"), "outside"), ("~/x", "outside"),
                      ("link", "symbolic link"), ("out", "not a file"), ("nope", "not found")):
        with pytest.raises(CommandError, match=why):
            read_turn_file(cwd, path, 100)
    with pytest.raises(CommandError, match="larger than"):
        read_turn_file(cwd, "out/a.txt", 4)
