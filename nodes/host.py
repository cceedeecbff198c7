"""The node host's life: connect as a node, wait to be paired, serve invocations, reconnect when the link drops.

It speaks the OpenClaw node protocol (role ``node``, a signed device proof, ``node.invoke.request`` events
answered with ``node.invoke.result``), so it pairs with a remoteclaw gateway or with OpenClaw's own. The
first connect needs the gateway token; a remoteclaw gateway then hands the approved node a node token
(saved in the state dir), and later connects use that alone, so the gateway token need not stay on the
machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import sys
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

import orjson

from gateway.protocol import RpcError
from mcp_shim.client import GatewayClient
from nodes.approvals import ExecApprovals
from nodes.commands import Commands
from nodes.errors import CommandError
from nodes.identity import NodeIdentity
from nodes.state import read_json, write_private

__all__ = ["NodeHost"]

CLIENT_ID = "node-host"
"""The client id OpenClaw's own node host uses: both gateways accept it."""

BACKOFF_MIN_S = 0.5
BACKOFF_MAX_S = 30.0
STABLE_AFTER_S = 10.0
"""A connection that lasted this long resets the back-off."""

DEDUPE_KEYS = 256
DEDUPE_TTL_S = 600.0
UNREMEMBERED = frozenset({"agent.file"})
"""Answers not kept for a retried key: they hold a file's bytes (a retry reads the file again)."""
INVOKE_GRACE_S = 2.0
"""How long past the request's timeoutMs the node keeps at an invocation before giving it up itself."""

UNAVAILABLE_EVENT = "capabilities.unavailable"

FATAL_CODES = frozenset({"AUTH_REQUIRED", "DEVICE_IDENTITY_REQUIRED", "PROTOCOL_MISMATCH"})


def _version() -> str:
    """The installed remoteclaw's version (the node host ships in the same package)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("remoteclaw")
    except PackageNotFoundError:
        return "0+source"


class NoCredentials(Exception):
    """Neither a node token nor the gateway token: nothing to connect with."""


def log(message: str) -> None:
    print(f"node-host: {message}", file=sys.stderr, flush=True)


class NodeHost:
    """One node: its identity, credentials, commands, and the connection loop.

    Args:
        url: the gateway's WebSocket URL.
        gateway_token: the gateway token (needed until this node holds a node token).
        display_name: how the node introduces itself.
        state: the state dir (identity, node token, exec approvals).
    """

    def __init__(self, url: str, *, gateway_token: str | None, display_name: str, state: Path,
                 browser: bool = True, desktop: bool = True, agents: bool | None = None) -> None:
        self.url = url
        self.gateway_token = gateway_token
        self.display_name = display_name
        self.state = state
        self.identity = NodeIdentity.load_or_create(state / "identity.json")
        self._unavailable: dict[str, str] = {}
        """Why a group of commands is missing, by the group's patterns (``canvas.*, browser.*``)."""
        self.commands = Commands(ExecApprovals(state / "exec-approvals.json"), self._browser(browser))
        self._want_desktop = desktop
        self._agents(agents)
        self.client: GatewayClient | None = None
        self._stop = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._running: dict[str, asyncio.Task[Any]] = {}
        self._agent_turns: set[str] = set()
        """The invocations among them that are agent turns (stopped when the link drops)."""
        """Invocations in progress by id, so ``node.invoke.cancel`` can stop them."""
        self._recent: OrderedDict[str, tuple[float, dict[str, Any]]] = OrderedDict()
        self._last_frame = time.monotonic()
        self._reconnect_now = asyncio.Event()

    def _browser(self, wanted: bool) -> Any:
        """The canvas and browser control, when this machine can run Chromium (else say why, once)."""
        if not wanted:
            return None
        from nodes.browser.canvas import canvas_host_url
        from nodes.browser.service import BrowserCommands

        browser, reason = BrowserCommands.create(self.state, canvas_host_url(self.url), self._emit)
        if browser is None:
            log(f"canvas and browser commands are off: {reason}")
            self._unavailable["canvas.*,browser.*"] = reason or "unknown"
        return browser

    def _agents(self, wanted: bool | None) -> None:
        """Agent turns (``agent.run``) when asked (``--agents``) or its owner enabled them, and a CLI is lent."""
        from nodes.agents.runner import AgentRunner
        from nodes.agents.settings import AgentHostSettings

        settings = AgentHostSettings.load(self.state)
        if not (settings.enabled if wanted is None else wanted):
            return
        lent = settings.resolved()
        if not lent:
            log("agent runs are off: no agent CLI is lent here (remoteclaw node agents set clis claude=claude)")
            self._unavailable["agent.*"] = "this node lends no agent CLI (remoteclaw node agents set clis ...)"
            return
        self.commands.agents = AgentRunner(self.state, self.url, self._report_agent_output)
        log(f"agent runs offered: {', '.join(sorted(lent))} in {', '.join(settings.folders) or 'private folders'}"
            f" (credentials: {settings.credentials}, sandbox: {settings.sandbox})")

    async def _report_agent_output(self, payload: dict[str, Any]) -> None:
        client = self.client
        if client is None:
            raise ConnectionError("not connected")
        await client.request("node.agent.output", payload, reconnect=False, timeout=15)

    async def _desktop(self) -> None:
        """The desktop commands (Cua Driver), when the driver, a display and the accessibility bus are here."""
        if not self._want_desktop:
            return
        from nodes.desktop.service import DesktopCommands

        desktop, found = await DesktopCommands.create(self.state)
        if desktop is None:
            log(f"desktop commands are off: {found.reason}")
            self._unavailable["desktop.*"] = found.reason or "unknown"
            return
        self.commands.desktop = desktop
        log(f"desktop: cua-driver {found.version or '?'} on {found.display}, {len(desktop.offered)} tools offered"
            + (f", {len(desktop.withheld)} withheld" if desktop.withheld else ""))

    async def _emit(self, event: str, payload: dict[str, Any]) -> None:
        """Send the gateway a node event (an A2UI button press, say); dropped, with a log line, when offline."""
        client = self.client
        if client is None:
            log(f"not connected: the {event} event was dropped")
            return
        try:
            await client.request("node.event", {"event": event, "payloadJSON": orjson.dumps(payload).decode()},
                                 reconnect=False, timeout=15)
        except RpcError as err:
            log(f"the gateway did not take the {event} event: {err.message}")

    @property
    def node_id(self) -> str:
        return self.identity.node_id

    # -- credentials ---------------------------------------------------------------------------

    def _saved_token(self) -> str | None:
        data = read_json(self.state / "node.json")
        token = data.get("token")
        return str(token) if token and data.get("url") == self.url else None

    def _save_token(self, token: str) -> None:
        write_private(self.state / "node.json", {"url": self.url, "nodeId": self.node_id, "token": token,
                                                 "savedAtMs": int(time.time() * 1000)})
        log("saved the node token: later connects no longer need the gateway token")

    def _forget_token(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.state / "node.json").unlink()

    def _client(self) -> GatewayClient:
        node_token = self._saved_token()
        caps, commands = self.commands.declared
        extra: dict[str, Any] = {"caps": list(caps), "commands": list(commands)}
        token = None
        if node_token:
            extra["auth"] = {"deviceToken": node_token}
        elif self.gateway_token:
            token = self.gateway_token
        else:
            raise NoCredentials("no credentials: pass --token (or set REMOTECLAW_GATEWAY_TOKEN) for the first "
                                "pairing; the gateway then issues this node its own token")
        client = GatewayClient(self.url, token, client_id=CLIENT_ID, mode="node", version=_version(), scopes=(),
                               role="node", on_event=self._on_event, extra_connect=extra,
                               device_signer=self.identity.proof, display_name=self.display_name)
        return client

    # -- the loop ------------------------------------------------------------------------------

    async def run(self) -> int:
        """Connect and serve until stopped; returns the exit code."""
        log(f"node id {self.node_id}, state in {self.state}")
        try:
            await self._desktop()
            return await self._loop()
        finally:
            for extra in (self.commands.browser, self.commands.desktop):
                if extra is not None:
                    with contextlib.suppress(Exception):
                        await extra.close()

    async def _loop(self) -> int:
        delay = BACKOFF_MIN_S
        while not self._stop.is_set():
            started = time.monotonic()
            self._reconnect_now.clear()
            try:
                client = self._client()
                hello = await client.connect()
            except RpcError as err:
                code = (err.details or {}).get("code")
                if code == "AUTH_TOKEN_MISMATCH" and self._saved_token():
                    log("the gateway refused this node's token (it was re-paired or removed): using the gateway "
                        "token again")
                    self._forget_token()
                    continue
                if code in FATAL_CODES or code == "AUTH_TOKEN_MISMATCH":
                    log(f"connect refused: {err.message} ({code}); giving up")
                    return 2
                log(f"connect refused: {err.message} ({code or err.code}); retrying in {delay:.1f}s")
            except NoCredentials as exc:
                log(str(exc))
                return 2
            except Exception as exc:  # the gateway is down or unreachable
                log(f"cannot reach {self.url}: {exc or type(exc).__name__}; retrying in {delay:.1f}s")
            else:
                await self._serve(client, hello)
                if time.monotonic() - started > STABLE_AFTER_S:
                    delay = BACKOFF_MIN_S
                if self._stop.is_set():
                    break
                if self._reconnect_now.is_set():  # asked to (pairing approved): at once, no back-off
                    delay = BACKOFF_MIN_S
                    continue
                log(f"disconnected; reconnecting in {delay:.1f}s")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), delay * random.uniform(0.8, 1.2))
            delay = min(delay * 2, BACKOFF_MAX_S)
        return 0

    async def _serve(self, client: GatewayClient, hello: dict[str, Any]) -> None:
        self.client = client
        auth = hello.get("auth") or {}
        if auth.get("deviceToken"):
            self._save_token(str(auth["deviceToken"]))
        tick_s = ((hello.get("policy") or {}).get("tickIntervalMs") or 30_000) / 1000
        if auth.get("paired"):
            log(f"connected to {self.url} as {self.display_name}; paired")
        elif "paired" not in auth:  # a gateway that does not say (OpenClaw): approval shows in its node list
            log(f"connected to {self.url} as {self.display_name}")
        else:
            request = auth.get("requestId")
            log(f"connected to {self.url}; waiting for the owner to approve this node"
                + (f" (remoteclaw nodes approve {request})" if request else ""))
        self._last_frame = time.monotonic()
        if auth.get("paired", True):
            self._say_unavailable()
            self._say_ready()
        watchdog = asyncio.create_task(self._watch(client, tick_s))
        try:
            waits = [asyncio.create_task(client.wait_closed()), asyncio.create_task(self._stop.wait()),
                     asyncio.create_task(self._reconnect_now.wait())]
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            for w in waits:
                w.cancel()
        finally:
            watchdog.cancel()
            self.client = None
            self._stop_agent_turns()
            await client.close()

    async def _watch(self, client: GatewayClient, tick_s: float) -> None:
        """Two missed ticks mean a dead link, even if TCP has not noticed: reconnect."""
        while True:
            await asyncio.sleep(tick_s)
            if time.monotonic() - self._last_frame > 2.5 * tick_s:
                log("no tick from the gateway for two intervals; reconnecting")
                await client.close()
                return

    def stop(self) -> None:
        self._stop.set()

    # -- events --------------------------------------------------------------------------------

    def _on_event(self, event: str, payload: Any) -> None:
        self._last_frame = time.monotonic()
        if not isinstance(payload, dict):
            return
        if event == "node.invoke.request":
            task = self._spawn(self._invoke(payload))
            invoke_id = str(payload.get("id") or "")
            if invoke_id:
                self._running[invoke_id] = task
                task.add_done_callback(lambda _t: self._forget(invoke_id))
                if payload.get("command") == "agent.run":
                    self._agent_turns.add(invoke_id)
        elif event == "node.invoke.cancel":
            # The caller gave up: stop the work (a process is killed with its group; a browser wait or
            # canvas call is cancelled), so nothing keeps running for an answer nobody will read.
            invoke_id = str(payload.get("invokeId"))
            killed = self.commands.cancel(invoke_id)
            running = self._running.pop(invoke_id, None)
            if running is not None and not running.done():
                running.cancel()
                killed = True
            if killed:
                log(f"cancelled invocation {invoke_id}: the caller stopped waiting")
        elif event == "node.pair.resolved" and payload.get("nodeId") == self.node_id:
            self._pairing_resolved(payload)

    def _pairing_resolved(self, payload: dict[str, Any]) -> None:
        decision = payload.get("decision")
        if decision != "approved":
            log(f"pairing {decision} by the gateway owner")
            return
        if payload.get("token"):
            self._save_token(str(payload["token"]))
            log("paired: serving invocations")
            self._say_unavailable()
            self._say_ready()
        else:
            # A gateway that does not hand out a token here (OpenClaw) settles the node's commands at connect.
            log("paired: reconnecting to take up the approved commands")
            self._reconnect_now.set()

    def _say_unavailable(self) -> None:
        """Why command groups are missing: the gateway quotes it to whoever calls them. One event names them all
        (the gateway keeps the latest payload of each event), each group's reason prefixed by its patterns."""
        if self._unavailable:
            patterns = [p for group in self._unavailable for p in group.split(",")]
            reason = self._unavailable[next(iter(self._unavailable))] if len(self._unavailable) == 1 else "; ".join(
                f"{group}: {why}" for group, why in self._unavailable.items())
            self._spawn(self._emit(UNAVAILABLE_EVENT, {"commands": patterns, "reason": reason,
                                                       "groups": dict(self._unavailable)}))

    def _say_ready(self) -> None:
        """A desktop node tells the gateway its tools can be read (``desktop.tools``) now that it may be invoked."""
        desktop = self.commands.desktop
        if desktop is not None:
            self._spawn(self._emit("desktop.ready", {"tools": len(desktop.offered)}))

    def _forget(self, invoke_id: str) -> None:
        self._running.pop(invoke_id, None)
        self._agent_turns.discard(invoke_id)

    def _stop_agent_turns(self) -> None:
        """The link to the gateway dropped: its turns here end (the gateway told the chat, and runs the message
        again when this node is back), rather than run on for an answer nobody can take."""
        for invoke_id in list(self._agent_turns):
            task = self._running.get(invoke_id)
            if task is not None and not task.done():
                log(f"stopping agent turn {invoke_id}: the connection to the gateway closed")
                task.cancel()

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _invoke(self, frame: dict[str, Any]) -> None:
        invoke_id = str(frame.get("id") or "")
        command = str(frame.get("command") or "")
        key = frame.get("idempotencyKey")
        answer: dict[str, Any] = {"id": invoke_id, "nodeId": self.node_id}
        remembered = self._remembered(key)
        if remembered is not None:
            answer.update(remembered)  # a retried call: the first answer, not a second run
        else:
            try:
                raw = frame.get("paramsJSON")
                params = orjson.loads(raw) if isinstance(raw, str) else frame.get("params")
                # The gateway stops waiting after the request's timeoutMs; so does the node, a moment later,
                # in case the gateway's node.invoke.cancel never arrives (a dropped link, another replica).
                limit = frame.get("timeoutMs")
                deadline = limit / 1000 + INVOKE_GRACE_S if isinstance(limit, int) and limit > 0 else None
                payload = await asyncio.wait_for(self.commands.run(command, params, invoke_id), deadline)
                answer.update(ok=True, payloadJSON=orjson.dumps(payload).decode())
            except TimeoutError:
                log(f"{command} stopped: it outlasted the caller's timeoutMs ({frame.get('timeoutMs')} ms)")
                answer.update(ok=False, error={"code": "UNAVAILABLE", "message": f"{command} took longer than "
                                                                                 "the caller's timeoutMs"})
            except CommandError as err:
                answer.update(ok=False, error={"code": err.code, "message": err.message})
            except orjson.JSONDecodeError:
                answer.update(ok=False, error={"code": "INVALID_REQUEST", "message": "paramsJSON is not JSON"})
            except Exception as exc:
                log(f"{command} failed: {exc!r}")
                answer.update(ok=False, error={"code": "UNAVAILABLE", "message": f"{command} failed on the node: "
                                                                                 f"{exc}"})
            if isinstance(key, str) and key and answer.get("ok") and command not in UNREMEMBERED:
                self._remember(key, {k: answer[k] for k in ("ok", "payloadJSON")})
        client = self.client
        if client is None:
            log(f"the connection closed before the answer to {command} could be sent")
            return
        try:
            await client.request("node.invoke.result", answer, reconnect=False, timeout=15)
        except RpcError as err:
            log(f"the gateway did not take the answer to {command}: {err.message}")

    def _remembered(self, key: Any) -> dict[str, Any] | None:
        if not isinstance(key, str) or key not in self._recent:
            return None
        at, answer = self._recent[key]
        return answer if time.monotonic() - at < DEDUPE_TTL_S else None

    def _remember(self, key: str, answer: dict[str, Any]) -> None:
        self._recent[key] = (time.monotonic(), answer)
        while len(self._recent) > DEDUPE_KEYS:
            self._recent.popitem(last=False)

