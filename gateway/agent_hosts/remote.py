"""The executor's turn carried to its node: the built command goes out as ``agent.run``, the output comes back.

The gateway builds the CLI's command with the same runtime adapter as for a local turn, from the node's paths
(``NodePlace``), and parses the output with the adapter's parser as it arrives (``streams``): everything a local
turn does with events (the live reply, the transcript, usage) is the same. The node answers the invoke with how
the process ended and the side-effect records its tools wrote, which are copied to the turn's local file so the
executor reads them as a local run's.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.agent_hosts.stdin import NodeStdin
from gateway.agents.runtimes.process import ProcessResult
from gateway.protocol import RpcError, Unavailable

if TYPE_CHECKING:
    from gateway.agent_hosts.placement import Host
    from gateway.agent_hosts.streams import TurnStreams
    from gateway.agents.runtimes.base import Invocation
    from gateway.agents.runtimes.process import StdinFeed
    from gateway.devices.service import NodeService

__all__ = ["LOST", "LOST_CODES", "NodePlace", "NodeProcess", "rebase"]

LOST_CODES = frozenset({"NODE_NOT_CONNECTED", "NODE_DISCONNECTED", "NODE_NOT_REACHABLE"})
"""A node that went away: the turn's message waits for it (``parked``)."""
MARGIN_MS = 30_000
"""The invoke waits this much past the run's own timeout: the run queue's timeout stops it first."""


LOST = "NODE_LOST"
"""``error.details.code`` of the ``Unavailable`` a turn raises when its node went away mid-turn."""


@dataclass(frozen=True, slots=True)
class NodePlace:
    """A turn's paths on its node, by the node's own description."""

    workspace: Path
    private: bool
    session: str
    """The session's folder name (its private workspace and CLI state there)."""
    fx_path: Path
    tools_path: Path
    cli_state: Path

    @classmethod
    def of(cls, host: Host, *, session_key: str, run_id: str, workspace: str | Path | None) -> NodePlace:
        session = hashlib.sha256(session_key.encode()).hexdigest()[:20]
        runs = host.path("runsDir")
        return cls(workspace=Path(workspace) if workspace else runs / session, private=workspace is None,
                   session=session, fx_path=runs / f"{run_id}.side-effects.ndjson",
                   tools_path=runs / f"{run_id}.plugin-tools.json", cli_state=host.path("stateDir") / session)


def rebase(values: dict[str, str], local_root: str, node_root: str) -> dict[str, str]:
    """The model gateway's addresses as the node reaches them (the stand-in's base URLs name the gateway's own)."""
    return {k: node_root + v[len(local_root):] if v.startswith(local_root) else v for k, v in values.items()}


class NodeProcess:
    """A ``ProcessRunner`` (``gateway.agents.runtimes.driver``) that runs the invocation on ``host``: its output
    comes back as the lines it writes, and with ``inv.keep_stdin`` the ``feed`` writes to its stdin there
    (``NodeStdin``), so the adapters drive a node's CLI as they drive a local one."""

    def __init__(self, nodes: NodeService, streams: TurnStreams, host: Host, place: NodePlace, *, run_id: str,
                 agent_id: str, runtime: str, logins: tuple[str, ...], plugin_tools: str, local_fx: Path,
                 timeout_s: float, attachments: list[dict[str, str]] | None = None,
                 project: dict[str, Any] | None = None) -> None:
        self._nodes = nodes
        self._streams = streams
        self.host = host
        self.place = place
        self._run_id = run_id
        self._agent_id = agent_id
        self._runtime = runtime
        self._logins = logins
        self._plugin_tools = plugin_tools
        self._local_fx = local_fx
        self._attachments = attachments or []
        """The message's files (``{name, base64}``, ``files.turn_attachments``): the node writes them in the turn's
        folder where a local turn has them."""
        self._timeout_ms = int(timeout_s * 1000) + MARGIN_MS
        self._attempt = 0
        self._project = project
        self.first_line_at: float | None = None
        self.diff: dict[str, Any] | None = None
        """What the turn changed in its git project, as the node diffed it (``{text, files, added, removed}``)."""

    async def __call__(self, inv: Invocation, on_object: Callable[[dict[str, Any]], None], *,
                       no_output_timeout: float, on_spawn: Callable[[float], None] | None = None,
                       feed: StdinFeed | None = None) -> ProcessResult:
        self._attempt += 1
        spawned = asyncio.Event()
        pipe = None
        if feed is not None and inv.keep_stdin:
            pipe = NodeStdin(self._nodes, self._streams, node_id=self.host.node_id, turn_id=self._run_id,
                             key=f"agent.input:{self._run_id}:{self._attempt}", started=spawned)
            feed.attach(pipe)
        params = {"turnId": self._run_id, "agentId": self._agent_id, "runtime": self._runtime,
                  "argv": list(inv.argv), "env": dict(inv.env), "cwd": str(inv.cwd),
                  "files": {str(path): text for path, text in inv.files.items()},
                  "stdin": inv.stdin.decode() if inv.stdin is not None else None, "passEnv": list(inv.pass_env),
                  "noOutputTimeoutS": no_output_timeout, "logins": list(self._logins), "session": self.place.session,
                  "private": self.place.private, "pluginTools": self._plugin_tools,
                  "attachments": self._attachments, "keepStdin": pipe is not None, "project": self._project}

        def lines(batch: list[Any]) -> None:
            for obj in batch:
                if not isinstance(obj, dict):
                    continue
                if obj.get("_spawned") is True:
                    spawned.set()
                    if on_spawn is not None:
                        on_spawn(time.monotonic())
                    continue
                if self.first_line_at is None:
                    self.first_line_at = time.monotonic()
                on_object(obj)

        self._streams.open(self._run_id, self.host.node_id, lines)
        try:
            answer = await self._nodes.invoke(self.host.node_id, "agent.run", params, timeout_ms=self._timeout_ms,
                                              idempotency_key=f"agent.run:{self._run_id}:{self._attempt}")
        except RpcError as err:
            code = (err.details or {}).get("code")
            if code in LOST_CODES:
                raise Unavailable(f"node {self.host.name} went away during the turn ({err.message})",
                                  details={"code": LOST, "nodeId": self.host.node_id}, retryable=True) from None
            raise
        finally:
            self._streams.close(self._run_id)
            if pipe is not None:
                await pipe.aclose()
            if feed is not None:
                feed.close()
        result = answer.get("payload") or {}
        effects = result.get("sideEffects")
        if isinstance(effects, str) and effects:
            self._local_fx.write_text(effects)
        diff = result.get("diff")
        self.diff = diff if isinstance(diff, dict) and isinstance(diff.get("text"), str) else None
        noise = result.get("stdoutNoise")
        return ProcessResult(returncode=result.get("returncode"), stderr_tail=str(result.get("stderrTail") or ""),
                             stdout_noise=[str(n) for n in noise] if isinstance(noise, list) else [],
                             watchdog_fired=bool(result.get("watchdogFired")))
