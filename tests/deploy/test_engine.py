"""The Docker deployment in a real engine: ``docker compose`` on the real files in ``deploy/`` (no copy adapted to
the test), as an operator following docs/deploy.md does it.

One compose project for the module (``rc-enginetest``), its images built once: the gateway builds and becomes
healthy (``/readyz``) on PostgreSQL and Redis, answers a turn, keeps its data across ``down`` + ``up``, pairs
the ``node`` profile's node and gets its canvas back as a PNG showing what was drawn, is not recreated when the
``node`` or the ``replicas`` profile is added, scales to three replicas with three names and one config, says
it is not ready while PostgreSQL is stopped, backs up and restores inside compose, is upgraded to N+1 in place
and rolled back, and as a rolling restart of two replicas, and survives the chaos run (``chaos`` marker: one of
three replicas killed under load, then PostgreSQL, then Redis stopped). Timings go to
``$REMOTECLAW_DOCKER_TIMINGS`` (a JSON file) for docs/deploy.md.

Needs root, a Docker engine (``scripts/docker-engine`` installs and starts one) and the base images
(``scripts/docker-base-images`` builds stand-ins where Docker Hub is out of reach). Where no engine can start the
tests fail saying why; they never skip. Deselected from the suite (``docker`` marker, tests/deploy/conftest.py).
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import os
import secrets
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from gateway.runs.recovery import RETRY_NOTICE
from tests.nodes.browser.test_browser_canvas import dark_pixels
from tests.support.ws import RawClient, operator

pytestmark = [pytest.mark.docker, pytest.mark.timeout(900)]
ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "deploy" / "compose.yaml"
PROJECT = "rc-enginetest"
PORT, BALANCED = 28789, 28780
SCALE_FILE = ROOT / "deploy" / "compose.scale.yaml"
TIMINGS: dict[str, float] = {}


def run(*argv: str, timeout: float = 600, check: bool = True, env: dict[str, str] | None = None,
        ) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False, cwd=ROOT,
                          env={**os.environ, **(env or {})})
    if check and done.returncode != 0:
        pytest.fail(f"{' '.join(argv[:4])}... exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


class Compose:
    """``docker compose -p rc-enginetest -f deploy/compose.yaml --env-file <secrets>``."""

    def __init__(self, env_file: Path) -> None:
        self.env_file = env_file
        self.token = ""

    def __call__(self, *args: str, timeout: float = 600, check: bool = True,
                 scaled: bool = False) -> subprocess.CompletedProcess[str]:
        files = ["-f", str(COMPOSE_FILE), *(["-f", str(SCALE_FILE)] if scaled else [])]
        return run("docker", "compose", "-p", PROJECT, *files, "--env-file", str(self.env_file),
                   *args, timeout=timeout, check=check)

    def container_ids(self, service: str) -> list[str]:
        return sorted(self("ps", "-q", service).stdout.split())

    def exec(self, service: str, *argv: str, index: int = 1, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self("exec", "-T", "--index", str(index), service, *argv, check=check)

    def ready(self, service: str, index: int = 1) -> tuple[int, dict[str, Any]]:
        """``/readyz`` asked inside the container (what Docker's health check asks)."""
        code = ("import json, urllib.request, urllib.error\n"
                "try:\n    r = urllib.request.urlopen('http://127.0.0.1:18789/readyz', timeout=5); s = r.status\n"
                "except urllib.error.HTTPError as e:\n    r, s = e, e.code\n"
                "print(s, r.read().decode())")
        out = self.exec(service, "/app/.venv/bin/python", "-c", code, index=index, check=False).stdout.strip()
        status, _, body = out.partition(" ")
        return (int(status), json.loads(body)) if status.isdigit() else (0, {"raw": out})


def wait_for(check: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
            if last:
                return last
        except (OSError, ValueError) as exc:
            last = exc
        time.sleep(0.5)
    pytest.fail(f"{what} not within {timeout} s (last: {last!r})")


def http(port: int, path: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


@pytest.fixture(scope="module")
def compose(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Compose]:
    engine = run(str(ROOT / "scripts" / "docker-engine"), check=False, timeout=600)
    assert engine.returncode == 0, f"no Docker engine could be started here: {engine.stderr.strip()}"
    started = time.monotonic()
    bases = run(str(ROOT / "scripts" / "docker-base-images"), check=False, timeout=900)
    assert bases.returncode == 0, f"the base images could not be built: {bases.stderr.strip()[-2000:]}"
    TIMINGS["base_images_s"] = round(time.monotonic() - started, 1)
    env_file = tmp_path_factory.mktemp("compose") / "env"
    env_file.write_text(f"REMOTECLAW_GATEWAY_TOKEN={secrets.token_hex(32)}\nPOSTGRES_PASSWORD={secrets.token_hex(16)}\n"
                        f"REDIS_PASSWORD={secrets.token_hex(16)}\nREMOTECLAW_PORT={PORT}\n"
                        f"REMOTECLAW_BALANCED_PORT={BALANCED}\n")
    env_file.chmod(0o600)
    c = Compose(env_file)
    c.token = env_file.read_text().split("\n")[0].split("=", 1)[1]
    c("--profile", "replicas", "--profile", "node", "down", "-v", "--remove-orphans", check=False)
    try:
        yield c
    finally:
        # every container's log, kept for a failure's post-mortem (the project is removed just below)
        logs = c("--profile", "replicas", "--profile", "node", "logs", "--no-color", "--timestamps", check=False,
                 scaled=True)
        (env_file.parent / "compose.log").write_text(logs.stdout + logs.stderr)
        c("--profile", "replicas", "--profile", "node", "down", "-v", "--remove-orphans", check=False)
        out = os.environ.get("REMOTECLAW_DOCKER_TIMINGS")
        if out:
            Path(out).write_text(json.dumps(TIMINGS, indent=2) + "\n")


FAKE_AGENT = {"agents": {"list": [{"id": "main", "command": ["/app/.venv/bin/python", "/data/fake_cli.py"]}]}}


async def turn(url: str, token: str, key: str, text: str) -> list[tuple[str, str]]:
    client: RawClient = await operator(url, token)
    try:
        sent = await client.call("chat.send", {"sessionKey": key, "message": text, "idempotencyKey": str(uuid.uuid4())})
        done = await client.call("agent.wait", {"runId": sent["runId"], "timeoutMs": 60_000}, timeout=70)
        assert done["status"] == "ok", done
        history = await client.call("chat.history", {"sessionKey": key})
        return [(m["role"], m["text"]) for m in history["messages"]]
    finally:
        await client.close()


async def test_builds_and_becomes_ready_on_postgresql(compose: Compose) -> None:
    started = time.monotonic()
    compose("build", "gateway", timeout=1200)
    TIMINGS["gateway_build_s"] = round(time.monotonic() - started, 1)
    started = time.monotonic()
    compose("build", "gateway", timeout=600)
    TIMINGS["gateway_build_warm_s"] = round(time.monotonic() - started, 1)
    started = time.monotonic()
    compose("up", "-d", "--wait", "--wait-timeout", "180", timeout=300)  # --wait: until Docker says healthy
    TIMINGS["up_to_healthy_s"] = round(time.monotonic() - started, 1)
    status, body = http(PORT, "/readyz")
    assert status == 200 and body["ready"] and body["database"] == "postgresql" and body["eventBus"] == "connected"
    mode = compose.exec("gateway", "stat", "-c", "%a %u", "/data").stdout.split()
    assert mode == ["700", "10001"], mode  # /data is the gateway user's alone


async def test_a_turn_runs_and_survives_down_and_up(compose: Compose) -> None:
    compose("cp", str(ROOT / "tests" / "support" / "fake_cli.py"), "gateway:/data/fake_cli.py")
    client = await operator(f"ws://127.0.0.1:{PORT}/", compose.token)
    try:
        got = await client.call("config.get")
        await client.call("config.patch", {"patch": FAKE_AGENT, "baseHash": got["hash"]})
    finally:
        await client.close()
    history = await turn(f"ws://127.0.0.1:{PORT}/", compose.token, "agent:main:main", "remember the blue door")
    assert ("user", "remember the blue door") in history and len(history) >= 2, history
    def dangling() -> set[str]:
        return set(run("docker", "volume", "ls", "-q", "--filter", "dangling=true").stdout.split())
    compose("down", timeout=120)
    left = dangling()
    compose("up", "-d", "--wait", "--wait-timeout", "180", timeout=300)
    compose("down", timeout=120)
    assert dangling() == left, "down + up left an anonymous volume behind"
    compose("up", "-d", "--wait", "--wait-timeout", "180", timeout=300)
    client = await operator(f"ws://127.0.0.1:{PORT}/", compose.token)
    try:
        kept = await client.call("chat.history", {"sessionKey": "agent:main:main"})
        assert any(m["text"] == "remember the blue door" for m in kept["messages"])
    finally:
        await client.close()


PRY = "/usr/local/lib/remoteclaw-test/prying_cli.py"


async def pry(compose: Compose, *, owner: bool, **ask: Any) -> dict[str, Any]:
    """One turn of the prying agent (tests/support/prying_cli.py) for the owner or a stranger: what it found."""
    scopes = ["operator.admin"] if owner else ["operator.read", "operator.write"]  # a stranger: the baseline tier
    client = await operator(f"ws://127.0.0.1:{PORT}/", compose.token, scopes=scopes)
    try:
        sent = await client.call("chat.send", {"sessionKey": f"agent:pry:pry:{uuid.uuid4().hex[:8]}",
                                               "message": json.dumps(ask), "idempotencyKey": str(uuid.uuid4())})
        done = await client.call("agent.wait", {"runId": sent["runId"], "timeoutMs": 60_000}, timeout=70)
    finally:
        await client.close()
    assert done["status"] == "ok", done  # not refused: bubblewrap works in the container (security_opt)
    found, _ = json.JSONDecoder().raw_decode(done["reply"])
    return dict(found)


async def test_a_strangers_turn_runs_sandboxed_in_the_container(compose: Compose) -> None:
    run("docker", "exec", "-u", "0", compose.container_ids("gateway")[0], "mkdir", "-p",
        "/usr/local/lib/remoteclaw-test")
    compose("cp", str(ROOT / "tests" / "support" / "prying_cli.py"), f"gateway:{PRY}")
    run("docker", "exec", "-u", "0", compose.container_ids("gateway")[0], "chmod", "a+rx", PRY)
    client = await operator(f"ws://127.0.0.1:{PORT}/", compose.token)
    try:
        got = await client.call("config.get")
        agents = [*FAKE_AGENT["agents"]["list"], {"id": "pry", "command": ["/app/.venv/bin/python", PRY]}]
        await client.call("config.patch", {"patch": {"agents": {"list": agents}}, "baseHash": got["hash"]})
    finally:
        await client.close()
    state = ["/data/remoteclaw.json", "/data/gateway.token", "/data/replica-id"]
    ask = {"paths": state, "secrets": [compose.token]}
    owner = await pry(compose, owner=True, **ask)
    stranger = await pry(compose, owner=False, **ask)
    assert not any(stranger["read"][p] for p in state), stranger["read"]  # the state dir is hidden from it
    assert compose.token not in stranger["leaked"], stranger["leaked"]
    assert not any("gateway run" in c for c in stranger["cmdlines"]), stranger["cmdlines"]  # its own PID space
    assert owner["read"] is not None


async def test_not_ready_while_postgresql_is_stopped(compose: Compose) -> None:
    compose("stop", "postgres", timeout=60)
    try:
        _, body = wait_for(lambda: (lambda r: r if r[0] == 503 else None)(http(PORT, "/readyz")), 30,
                                "/readyz 503")
        assert any("database unreachable" in r for r in body["reasons"]), body
        assert http(PORT, "/healthz")[0] == 200  # alive all the same
    finally:
        compose("start", "postgres", timeout=60)
    wait_for(lambda: http(PORT, "/readyz")[0] == 200, 60, "/readyz 200 again")


NODE_NAME = "compose-node"  # deploy/compose.yaml's node service: --display-name compose-node
CANVAS_TITLE = "Drawn on the compose node"
CANVAS_CARD = "\n".join(json.dumps(m) for m in (
    {"surfaceUpdate": {"surfaceId": "main", "components": [
        {"id": "root", "component": {"Card": {"child": "title"}}},
        {"id": "title", "component": {"Text": {"text": {"literalString": CANVAS_TITLE}, "usageHint": "h1"}}}]}},
    {"beginRendering": {"surfaceId": "main", "root": "root"}}))
CRIMSON, WHITE = (220, 20, 60), (255, 255, 255)
BLOCK_PAGE = ("data:text/html,<body style='margin:0;background:rgb(255,255,255)'><div style='position:absolute;"
              "left:100px;top:50px;width:200px;height:100px;background:rgb(220,20,60)'></div></body>")


def node_cli(compose: Compose, *argv: str) -> Any:
    """``remoteclaw nodes ... --json`` inside the gateway container, as docs/deploy.md tells the operator."""
    out = compose.exec("gateway", "/app/.venv/bin/remoteclaw", "nodes", *argv, "--json").stdout
    return json.loads(out)


def picture(answer: dict[str, Any]) -> Any:
    """The image in a ``canvas.snapshot`` answer, checked to be a PNG by its signature before Pillow reads it."""
    from PIL import Image

    shot = answer["payload"]
    assert shot["format"] == "png", {k: v for k, v in shot.items() if k != "base64"}
    data = base64.b64decode(shot["base64"])
    assert data[:8] == b"\x89PNG\r\n\x1a\n", data[:16]
    return Image.open(io.BytesIO(data)).convert("RGB")


def near(pixel: tuple[int, int, int], colour: tuple[int, int, int]) -> bool:
    return all(abs(a - b) <= 3 for a, b in zip(pixel, colour, strict=True))


async def test_the_node_profile_pairs_and_its_canvas_snapshot_shows_what_was_drawn(compose: Compose) -> None:
    """``--profile node up`` next to the running gateway (not recreated): the node (deploy/Dockerfile.node, Debian's
    Chromium driven by Playwright) asks to pair over compose's network, is approved as docs/deploy.md says, and
    draws what it is given: an A2UI card on the gateway's canvas host page (loaded from ``http://gateway:18789``)
    and a page of known colours; ``canvas.snapshot`` through the gateway brings back PNGs with those pixels. The
    node is removed at the end, so the tests after run on the project as they would without it."""
    before = compose.container_ids("gateway")
    started = time.monotonic()
    compose("--profile", "node", "build", "node", timeout=1500)
    TIMINGS["node_build_s"] = round(time.monotonic() - started, 1)
    try:
        compose("--profile", "node", "up", "-d", "node", timeout=300)  # no --wait: a node has no health check
        assert compose.container_ids("gateway") == before  # the node's profile leaves the running gateway alone
        request = wait_for(lambda: next((r for r in node_cli(compose, "pending")
                                         if r["displayName"] == NODE_NAME), None), 60, "the node's pairing request")
        assert "canvas.snapshot" in request["commands"], request  # Chromium and Playwright's driver load
        approved = node_cli(compose, "approve", request["requestId"])
        assert approved["decision"] == "approved", approved
        node_id = request["nodeId"]
        live = wait_for(lambda: next((n for n in node_cli(compose, "list")["nodes"] if n["nodeId"] == node_id
                                      and n["status"] == "approved" and n.get("connected")), None),
                        60, "the node connected with its own token")
        assert "canvas.snapshot" in live["allowedCommands"], live

        client = await operator(f"ws://127.0.0.1:{PORT}/", compose.token)
        try:
            async def canvas(command: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
                body = {"nodeId": node_id, "command": command, "params": params or {}, "timeoutMs": 60_000,
                        "idempotencyKey": str(uuid.uuid4())}
                answer: dict[str, Any] = await client.call("node.invoke", body, timeout=75)
                return answer

            shown = await canvas("canvas.present", {"placement": {"width": 800, "height": 600}})
            assert shown["payload"]["url"] == "http://gateway:18789/__remoteclaw__/canvas/", shown
            empty = picture(await canvas("canvas.snapshot", {"format": "png"}))
            pushed = await canvas("canvas.a2ui.pushJSONL", {"jsonl": CANVAS_CARD})
            assert pushed["payload"]["surfaces"] == ["main"], pushed
            drawn = picture(await canvas("canvas.snapshot", {"format": "png"}))
            assert drawn.size == empty.size == (800, 600)
            title_area = (0, 0, 800, 150)  # the card's h1, near the top
            assert dark_pixels(drawn, title_area) > 200 > dark_pixels(empty, title_area)
            text = await canvas("canvas.eval", {"javaScript":
                                                "document.querySelector('[data-a2ui-id=title]').textContent"})
            assert text["payload"]["result"] == CANVAS_TITLE

            await canvas("canvas.present", {"url": BLOCK_PAGE})
            block = picture(await canvas("canvas.snapshot", {"format": "png"}))
            assert block.size == (800, 600)
            assert near(block.getpixel((200, 100)), CRIMSON) and near(block.getpixel((101, 51)), CRIMSON)
            assert near(block.getpixel((50, 25)), WHITE) and near(block.getpixel((400, 300)), WHITE)
            grid = [(x, y) for x in range(0, 800, 4) for y in range(0, 600, 4)]
            crimson = sum(1 for xy in grid if near(block.getpixel(xy), CRIMSON))
            assert crimson == 50 * 25, crimson  # the 200 x 100 block, every 4th pixel each way, and nothing else
        finally:
            await client.close()
    finally:
        compose("--profile", "node", "rm", "-s", "-f", "node", timeout=120, check=False)
    assert compose.container_ids("gateway") == before


async def test_the_replicas_profile_leaves_the_running_gateway_alone(compose: Compose) -> None:
    before = compose.container_ids("gateway")
    compose("--profile", "replicas", "up", "-d", "--wait", "--wait-timeout", "180", timeout=300)
    assert compose.container_ids("gateway") == before  # not recreated: its sockets stay
    status, body = compose.ready("gateway-b")
    assert status == 200, body
    assert body["replicaId"] != compose.ready("gateway")[1]["replicaId"]
    wait_for(lambda: http(BALANCED, "/readyz")[0] == 200, 30, "the balancer")


async def test_a_killed_replica_loses_no_client_for_long(compose: Compose) -> None:
    """``docker kill`` of the gateway replica: new clients through the balancer reach gateway-b and are answered."""
    compose("cp", str(ROOT / "tests" / "support" / "fake_cli.py"), "gateway-b:/data/fake_cli.py")
    url = f"ws://127.0.0.1:{BALANCED}/"
    assert (await turn(url, compose.token, "agent:main:before-kill", "before the kill"))[-1][0] == "assistant"
    killed_at = time.monotonic()
    run("docker", "kill", compose.container_ids("gateway")[0])

    async def answered() -> bool:
        try:
            history = await turn(url, compose.token, f"agent:main:after-{uuid.uuid4().hex[:6]}", "after the kill")
        except (OSError, AssertionError, ConnectionError, TimeoutError, InvalidHandshake, ConnectionClosed):
            await asyncio.sleep(0.2)
            return False
        return history[-1][0] == "assistant"
    deadline = time.monotonic() + 60
    while not await answered():
        assert time.monotonic() < deadline, "no answer through the balancer within 60 s of the kill"
    TIMINGS["answer_after_kill_s"] = round(time.monotonic() - killed_at, 1)
    compose("--profile", "replicas", "up", "-d", "--wait", "--wait-timeout", "180", timeout=300)


async def test_scale_to_three_replicas_with_three_names_and_one_config(compose: Compose) -> None:
    compose("--profile", "replicas", "up", "-d", "--wait", "--wait-timeout", "180", "--scale", "gateway=3",
            timeout=300, scaled=True)
    names = {compose.ready("gateway", i)[1].get("replicaId") for i in (1, 2, 3)}
    assert len(names) == 3 and None not in names, names  # one volume, three names
    through = await operator(f"ws://127.0.0.1:{BALANCED}/", compose.token)
    try:
        got = await through.call("config.get")
        await through.call("config.patch", {"patch": {"session": {"dmScope": "per-channel-peer"}},
                                            "baseHash": got["hash"]})
    finally:
        await through.close()

    def runs_it(service: str, index: int) -> bool:
        out = compose.exec(service, "/app/.venv/bin/remoteclaw", "gateway", "call", "config.get", "--json",
                           index=index, check=False).stdout
        try:
            return bool(json.loads(out)["config"]["session"]["dmScope"] == "per-channel-peer")
        except (ValueError, KeyError):
            return False
    for service, index in (("gateway", 1), ("gateway", 2), ("gateway", 3), ("gateway-b", 1)):
        wait_for(lambda service=service, index=index: runs_it(service, index), 20, f"{service} #{index}'s config")
    # gateway-b has its own volume and file, and its file mirrors the one config all the same
    b = compose.exec("gateway-b", "cat", "/data/remoteclaw.json").stdout
    assert json.loads(b)["session"]["dmScope"] == "per-channel-peer"
    compose("--profile", "replicas", "rm", "-s", "-f", "gateway", timeout=120, scaled=True)  # back to one
    compose("--profile", "replicas", "up", "-d", "--wait", "--wait-timeout", "180", timeout=300)


def replica_of(container: str) -> str:
    """The replica name a gateway container runs as (its ``/readyz``)."""
    code = ("import json, urllib.request, urllib.error\n"
            "try:\n    r = urllib.request.urlopen('http://127.0.0.1:18789/readyz', timeout=5)\n"
            "except urllib.error.HTTPError as e:\n    r = e\n"
            "print(json.loads(r.read())['replicaId'])")
    return run("docker", "exec", container, "/app/.venv/bin/python", "-c", code).stdout.strip()


async def with_the_fake_agent(compose: Compose) -> None:
    """The stand-in CLI on every replica (the scaled ones share gateway's volume) and the agent that runs it, in
    the one config they share: so the chaos run also runs alone (``-m chaos``)."""
    compose("cp", str(ROOT / "tests" / "support" / "fake_cli.py"), "gateway:/data/fake_cli.py")
    compose("--profile", "replicas", "cp", str(ROOT / "tests" / "support" / "fake_cli.py"),
            "gateway-b:/data/fake_cli.py")
    client = await operator(f"ws://127.0.0.1:{BALANCED}/", compose.token)
    try:
        got = await client.call("config.get")
        agents = got["config"].get("agents", {}).get("list", [])
        fake = FAKE_AGENT["agents"]["list"][0]
        if not any(a.get("id") == "main" and a.get("command") == fake["command"] for a in agents):
            others = [a for a in agents if a.get("id") != "main"]
            await client.call("config.patch", {"patch": {"agents": {"list": [fake, *others]}},
                                               "baseHash": got["hash"]})
    finally:
        await client.close()


async def reachable(url: str, token: str) -> RawClient | None:
    try:
        return await operator(url, token)
    except (OSError, AssertionError, ConnectionError, TimeoutError, InvalidHandshake, ConnectionClosed):
        return None


@pytest.mark.chaos
async def test_chaos_three_replicas_every_accepted_message_answered_once(compose: Compose, tmp_path: Path) -> None:
    """Three replicas behind the balancer with clients connected, turns in flight and a cron job firing every 3 s:
    ``docker kill`` one, then PostgreSQL stopped for 10 s, then Redis: every message a replica accepted is
    answered, exactly once; every cron firing ran once; the killed replica's clients reconnect to a live one."""
    compose("--profile", "replicas", "up", "-d", "--wait", "--wait-timeout", "180", "--scale", "gateway=2",
            timeout=300, scaled=True)
    wait_for(lambda: http(BALANCED, "/readyz")[0] == 200, 60, "the balancer")
    await with_the_fake_agent(compose)
    url = f"ws://127.0.0.1:{BALANCED}/"
    accepted: dict[str, str] = {}  # session key -> the message's text
    refused = 0

    async def send(wave: str, n: int) -> None:
        nonlocal refused
        for i in range(n):
            key, text = f"agent:main:chaos-{wave}-{i}", f"chaos {wave} {i} sleep:2"
            client = await reachable(url, compose.token)
            if client is None:
                refused += 1  # no replica ready (the database away from all of them): the balancer says 503
                continue
            try:
                frame = await client.req("chat.send", {"sessionKey": key, "message": text,
                                                       "idempotencyKey": f"chaos-{wave}-{i}"}, timeout=20)
                if frame["ok"]:
                    accepted[key] = text
                else:
                    refused += 1
            except (OSError, ConnectionError, TimeoutError, ConnectionClosed):
                refused += 1  # not accepted: the client saw no answer, and may send again
            finally:
                await client.close()

    # Clients that stay connected through the balancer, each knowing the replica it reached.
    victim = compose.container_ids("gateway")[1]
    victim_replica = replica_of(victim)
    watchers: list[tuple[RawClient, str]] = []
    deadline = time.monotonic() + 60  # a replica just started is in the balancer after its first checks
    while len(watchers) < 9 or not any(r == victim_replica for _, r in watchers):
        assert time.monotonic() < deadline, ("no client reached the replica to be killed",
                                             [r for _, r in watchers], victim_replica)
        client = await operator(url, compose.token)
        watchers.append((client, (await client.call("status"))["replicaId"]))
        await asyncio.sleep(0.5)
    setup = await operator(url, compose.token)
    try:
        job = await setup.call("cron.add", {"name": "chaos tick", "schedule": {"kind": "every", "everyMs": 3000},
                                            "payload": {"kind": "agentTurn", "message": "cron tick"}})
        deadline = time.monotonic() + 30  # a firing before the faults (the first is due 3 s after the add)
        while not any(r["status"] == "ok" for r in
                      (await setup.call("cron.runs", {"id": job["id"], "limit": 10}))["entries"]):
            assert time.monotonic() < deadline, "the cron job did not fire within 30 s of being added"
            await asyncio.sleep(0.5)
    finally:
        await setup.close()

    await send("calm", 4)
    killed_at = time.monotonic()
    run("docker", "kill", victim)  # one replica dies with turns in flight and clients connected

    async def moved(client: RawClient) -> float:
        """Seconds from the kill until this client, cut off, is connected again to a live replica."""
        await client.wait_closed(timeout=60)
        while True:
            again = await reachable(url, compose.token)
            if again is not None:
                replica = (await again.call("status"))["replicaId"]
                await again.close()
                assert replica != victim_replica, "reconnected to the killed replica"
                return time.monotonic() - killed_at
            await asyncio.sleep(0.2)
    moving = [asyncio.create_task(moved(c)) for c, r in watchers if r == victim_replica]
    await send("killed", 4)
    compose("stop", "postgres", timeout=60)
    await send("nodb", 2)
    await asyncio.sleep(10)
    compose("start", "postgres", timeout=60)
    wait_for(lambda: http(BALANCED, "/readyz")[0] == 200, 90, "a replica ready again after PostgreSQL")
    await send("dbback", 3)
    compose("stop", "redis", timeout=60)
    await send("noredis", 2)
    await asyncio.sleep(10)
    compose("start", "redis", timeout=60)
    wait_for(lambda: http(BALANCED, "/readyz")[0] == 200, 90, "a replica ready again after Redis")
    await send("redisback", 3)
    faults_over_ms = int(time.time() * 1000)
    assert len(accepted) >= 10, (len(accepted), refused)
    reconnects = await asyncio.wait_for(asyncio.gather(*moving), 120)
    stayed = [c for c, r in watchers if r != victim_replica]
    for c in stayed:  # the live replicas' clients were never cut (a database or Redis outage closes nothing)
        assert c.close_code is None, ("a live replica's client was cut", c.close_code, c.close_reason)
        await c.close()

    async def answered_once(key: str, text: str) -> bool:
        client = await reachable(url, compose.token)
        if client is None:
            return False
        try:
            history = [(m["role"], m["text"]) for m in
                       (await client.call("chat.history", {"sessionKey": key}))["messages"]]
        except (OSError, AssertionError, ConnectionError, TimeoutError):
            return False
        finally:
            await client.close()
        users = [t for r, t in history if r == "user"]
        # a turn cut by the kill is taken over by another replica, which says so (RETRY_NOTICE) and runs it again
        replies = [t for r, t in history if r == "assistant" and t != RETRY_NOTICE]
        assert users.count(text) <= 1 and len(replies) <= 1, (key, history)  # never twice
        if len(replies) == 1:
            assert replies[0] == f"echo: {text}", (key, history)  # answered, not an error kept in its place
        return len(replies) == 1
    lost = []
    deadline = time.monotonic() + 150  # a dead replica's turns are adopted once its lease and heartbeat lapse
    for key, text in accepted.items():
        while not await answered_once(key, text):
            if time.monotonic() > deadline:
                lost.append(key)
                break
            await asyncio.sleep(1)
    TIMINGS["chaos_accepted"] = len(accepted)
    TIMINGS["chaos_not_accepted"] = refused
    TIMINGS["chaos_lost"] = len(lost)
    TIMINGS["chaos_clients_moved"] = len(reconnects)
    TIMINGS["chaos_clients_moved_within_s"] = round(max(reconnects), 1)
    logs = ""
    if lost:  # what the replicas said about them, for the failure's report (all of it in a file)
        said = compose("--profile", "replicas", "logs", "--no-color", check=False, scaled=True).stdout
        (tmp_path / "replicas.log").write_text(said)
        logs = "\n".join(line for line in said.splitlines() if any(k in line for k in lost))[-6000:]
    assert not lost, (lost, f"the replicas' logs: {tmp_path / 'replicas.log'}", logs)

    # The cron job: it fires again after the faults (a firing the killed replica had claimed waits until that
    # replica is found dead, a lease lifetime of the survivors' own beats after the database came back), then it
    # is stopped, and every firing it had is one run, none twice.
    admin = await operator(url, compose.token)
    try:
        async def fired_after_the_faults() -> bool:
            entries = (await admin.call("cron.runs", {"id": job["id"], "limit": 1000}))["entries"]
            return any(r["status"] == "ok" and r["startedAtMs"] > faults_over_ms for r in entries)
        deadline = time.monotonic() + 120
        while not await fired_after_the_faults():
            assert time.monotonic() < deadline, "the cron job did not fire again within 120 s of the faults"
            await asyncio.sleep(1)
        TIMINGS["chaos_cron_fires_again_after_faults_s"] = round(time.time() - faults_over_ms / 1000, 1)
        await admin.call("cron.update", {"id": job["id"], "patch": {"enabled": False}})
        await asyncio.sleep(3)  # a firing already claimed ends
        runs = (await admin.call("cron.runs", {"id": job["id"], "limit": 1000, "sortDir": "asc"}))["entries"]
    finally:
        await admin.close()
    due = [r["scheduledForMs"] for r in runs if r.get("scheduledForMs") is not None]
    assert len(due) == len(set(due)), ("a cron firing ran twice", runs)
    assert all(r["status"] in ("ok", "interrupted") for r in runs), runs
    assert sum(1 for r in runs if r["status"] == "interrupted") <= 1, runs  # at most the one the kill cut
    # One firing before the kill and one after the faults at least: those in between are not owed (firings due while
    # the killed replica's claim lapses, or while the database is away, are skipped, not made up for later).
    assert len(runs) >= 2, runs
    TIMINGS["chaos_cron_firings"] = len(runs)
    TIMINGS["chaos_cron_interrupted"] = sum(1 for r in runs if r["status"] == "interrupted")
    compose("--profile", "replicas", "rm", "-s", "-f", "gateway", timeout=120, scaled=True)
    compose("--profile", "replicas", "up", "-d", "--wait", "--wait-timeout", "180", timeout=300)


async def test_backup_and_restore_inside_compose(compose: Compose) -> None:
    compose.exec("gateway", "/app/.venv/bin/remoteclaw", "backup", "--output", "/data/backup.tar.gz")
    compose("--profile", "replicas", "stop", "gateway", "gateway-b", timeout=120)
    # the restore runs where the gateway would, on the compose network and volume, with the gateway stopped
    compose("--profile", "replicas", "run", "--rm", "--no-deps", "-T", "gateway", "/app/.venv/bin/remoteclaw",
            "restore", "/data/backup.tar.gz", "--force", timeout=300)
    compose("--profile", "replicas", "up", "-d", "--wait", "--wait-timeout", "180", timeout=300)
    client = await operator(f"ws://127.0.0.1:{PORT}/", compose.token)
    try:
        kept = await client.call("chat.history", {"sessionKey": "agent:main:main"})
        assert any(m["text"] == "remember the blue door" for m in kept["messages"])
    finally:
        await client.close()


MIGRATION_N1 = '''"""Image N+1's migration (made by tests/deploy/test_engine.py): one table more.

Revision ID: 9000_upgrade_test
Revises: 0022_shared_config
"""
import sqlalchemy as sa
from alembic import op

revision = "9000_upgrade_test"
down_revision = "0022_shared_config"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("upgrade_test", sa.Column("id", sa.Integer(), primary_key=True))


def downgrade() -> None:
    op.drop_table("upgrade_test")
'''


def build_n1(context: Path) -> None:
    """Image N+1 (N with a migration more) as ``remoteclaw:latest``; N kept as ``remoteclaw:n``."""
    run("docker", "tag", "remoteclaw:latest", "remoteclaw:n")
    (context / "9000_upgrade_test.py").write_text(MIGRATION_N1)
    (context / "Dockerfile").write_text("FROM remoteclaw:n\nCOPY 9000_upgrade_test.py /app/migrations/versions/\n")
    run("docker", "build", "-q", "-t", "remoteclaw:latest", str(context))


async def test_upgrade_to_n1_then_a_rollback_refuses_and_the_backup_restores_into_n(
        compose: Compose, tmp_path: Path) -> None:
    """Image N to N+1 (a migration) in place; N again refuses the newer schema saying what to do; the backup
    taken before the upgrade restores into N."""
    compose.exec("gateway", "/app/.venv/bin/remoteclaw", "backup", "--output", "/data/before-upgrade.tar.gz")
    try:
        build_n1(tmp_path)
        started = time.monotonic()
        compose("up", "-d", "--wait", "--wait-timeout", "180", "gateway", timeout=300)  # N+1 migrates on start
        TIMINGS["upgrade_in_place_s"] = round(time.monotonic() - started, 1)
        client = await operator(f"ws://127.0.0.1:{PORT}/", compose.token)
        try:
            kept = await client.call("chat.history", {"sessionKey": "agent:main:main"})
            assert any(m["text"] == "remember the blue door" for m in kept["messages"])
        finally:
            await client.close()

        run("docker", "tag", "remoteclaw:n", "remoteclaw:latest")  # roll back to N
        compose("up", "-d", "gateway", timeout=300)

        def refused() -> str | None:
            logs = compose("logs", "--no-color", "gateway", check=False).stdout
            return logs if "migrated by a newer version" in logs else None
        logs = wait_for(refused, 90, "image N refusing the newer schema")
        assert "restore the backup taken before upgrading" in logs
        compose("stop", "gateway", timeout=120)
        compose("run", "--rm", "--no-deps", "-T", "gateway", "/app/.venv/bin/remoteclaw", "restore",
                "/data/before-upgrade.tar.gz", "--force", timeout=300)
        compose("up", "-d", "--wait", "--wait-timeout", "180", "gateway", timeout=300)
        status, body = http(PORT, "/readyz")
        assert status == 200, body
    finally:
        run("docker", "tag", "remoteclaw:n", "remoteclaw:latest", check=False)
        run("docker", "rmi", "remoteclaw:n", check=False)


async def test_a_rolling_upgrade_of_two_replicas_loses_no_message_and_answers_none_twice(
        compose: Compose, tmp_path: Path) -> None:
    """Image N to N+1 (a migration) one replica at a time behind the balancer, with messages sent all along:
    ``gateway`` is recreated on N+1 (it drains, then migrates the shared database at start) while ``gateway-b``
    on N goes on answering, then ``gateway-b``. Every message a replica accepted is answered once."""
    compose("--profile", "replicas", "up", "-d", "--wait", "--wait-timeout", "180", timeout=300)
    wait_for(lambda: http(BALANCED, "/readyz")[0] == 200, 60, "the balancer")
    await with_the_fake_agent(compose)
    compose.exec("gateway", "/app/.venv/bin/remoteclaw", "backup", "--output", "/data/before-rolling.tar.gz")
    url = f"ws://127.0.0.1:{BALANCED}/"
    accepted: dict[str, str] = {}
    refused = 0
    stop = asyncio.Event()

    async def sender() -> None:
        nonlocal refused
        i = 0
        while not stop.is_set():
            key, text = f"agent:main:rolling-{i}", f"rolling {i} sleep:1"
            i += 1
            client = await reachable(url, compose.token)
            if client is None:
                refused += 1
                await asyncio.sleep(0.2)
                continue
            try:
                frame = await client.req("chat.send", {"sessionKey": key, "message": text,
                                                       "idempotencyKey": f"rolling-{key}"}, timeout=20)
                if frame["ok"]:
                    accepted[key] = text
                else:
                    refused += 1
            except (OSError, ConnectionError, TimeoutError, ConnectionClosed):
                refused += 1  # no answer: not accepted as far as the client knows, it may send again
            finally:
                await client.close()
            await asyncio.sleep(0.3)

    try:
        build_n1(tmp_path)
        n1 = run("docker", "image", "inspect", "-f", "{{.Id}}", "remoteclaw:latest").stdout.strip()
        sending = asyncio.create_task(sender())
        await asyncio.sleep(3)
        started = time.monotonic()
        for service in ("gateway", "gateway-b"):  # one at a time: the other answers meanwhile
            await asyncio.to_thread(compose, "--profile", "replicas", "up", "-d", "--no-deps", "--wait",
                                    "--wait-timeout", "180", service, timeout=300)
            await asyncio.to_thread(wait_for, lambda: http(BALANCED, "/readyz")[0] == 200, 60, "the balancer")
            await asyncio.sleep(3)
        TIMINGS["rolling_upgrade_s"] = round(time.monotonic() - started, 1)
        stop.set()
        await sending
        for service in ("gateway", "gateway-b"):
            cid = compose.container_ids(service)[0]
            assert run("docker", "inspect", "-f", "{{.Image}}", cid).stdout.strip() == n1, f"{service} is not on N+1"
        tables = compose.exec("postgres", "psql", "-U", "remoteclaw", "-d", "remoteclaw", "-tAc",
                              "SELECT count(*) FROM upgrade_test").stdout.strip()
        assert tables == "0", tables  # N+1's migration ran, once

        lost: list[str] = []
        deadline = time.monotonic() + 90
        for key, text in accepted.items():
            while True:
                client = await reachable(url, compose.token)
                history: list[tuple[str, str]] = []
                if client is not None:
                    said = (await client.call("chat.history", {"sessionKey": key}))["messages"]
                    history = [(m["role"], m["text"]) for m in said]
                    await client.close()
                replies = [t for r, t in history if r == "assistant" and t != RETRY_NOTICE]
                assert [t for r, t in history if r == "user"].count(text) <= 1 and len(replies) <= 1, (key, history)
                if replies:
                    assert replies == [f"echo: {text}"], (key, history)
                    break
                if time.monotonic() > deadline:
                    lost.append(key)
                    break
                await asyncio.sleep(1)
        TIMINGS["rolling_accepted"] = len(accepted)
        TIMINGS["rolling_not_accepted"] = refused
        TIMINGS["rolling_lost"] = len(lost)
        assert len(accepted) >= 10, (len(accepted), refused)
        assert not lost, lost
    finally:
        stop.set()
        # back to N and its schema, for whatever runs after: the backup taken before the upgrade
        run("docker", "tag", "remoteclaw:n", "remoteclaw:latest", check=False)
        run("docker", "rmi", "remoteclaw:n", check=False)
        compose("--profile", "replicas", "stop", "gateway", "gateway-b", timeout=120, check=False)
        compose("run", "--rm", "--no-deps", "-T", "gateway", "/app/.venv/bin/remoteclaw", "restore",
                "/data/before-rolling.tar.gz", "--force", timeout=300, check=False)
        compose("--profile", "replicas", "up", "-d", "--wait", "--wait-timeout", "180", timeout=300, check=False)
