"""A node turn's output on its way to the replica that runs the turn.

The node sends its CLI's output lines with ``node.agent.output {turnId, seq, lines}`` on its own socket, which
may be held by another replica than the one running the turn: there they travel over the bus
(``agent.turn.output``). Where the turn runs, each batch is decided by the access model: the node may write to
a turn placed on it, and to no other (``Obj("node", key=<its node id>)``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog

from gateway.access import Obj, Principal, may

if TYPE_CHECKING:
    from gateway.bus import EventBus

__all__ = ["CONTROL", "TurnStreams"]

log = structlog.get_logger("gateway.agent_hosts")

CONTROL = "agent.turn.output"


@dataclass(slots=True)
class _Listener:
    node_id: str
    on_lines: Callable[[list[Any]], None]
    seq: int = 0


class TurnStreams:
    """The turns running here on nodes, by turn (run) id, and the output batches delivered to them."""

    def __init__(self, bus: EventBus | None) -> None:
        self._bus = bus
        self._turns: dict[str, _Listener] = {}
        if bus is not None:
            bus.on_control(CONTROL, self._on_bus)

    def open(self, turn_id: str, node_id: str, on_lines: Callable[[list[Any]], None]) -> None:
        self._turns[turn_id] = _Listener(node_id, on_lines)

    def close(self, turn_id: str) -> None:
        self._turns.pop(turn_id, None)

    def input_allowed(self, turn_id: str, node_id: str) -> bool:
        """Whether stdin may go to ``node_id`` for ``turn_id``: a turn running here, placed on that node (the same
        decision as for its output: the turn's stream is that node's object)."""
        turn = self._turns.get(turn_id)
        return turn is not None and may(Principal("node", node_id=node_id), "write", Obj("node", key=turn.node_id))

    def deliver(self, node: Principal, turn_id: str, seq: int, lines: list[Any]) -> str:
        """One batch from ``node``: ``delivered``, ``refused`` (not its turn), ``stale`` (a repeat or an ended turn),
        or ``relayed`` (the turn is elsewhere: the bus carries it there)."""
        turn = self._turns.get(turn_id)
        if turn is None:
            if self._bus is not None and self._bus.connected:
                self._bus.publish_control(CONTROL, {"turnId": turn_id, "nodeId": node.node_id, "seq": seq,
                                                    "lines": lines})
                return "relayed"
            return "stale"
        if not may(node, "write", Obj("node", key=turn.node_id)):
            log.warning("a node reported output for a turn that is not on it", node_id=node.node_id, turn_id=turn_id)
            return "refused"
        if seq <= turn.seq:
            return "stale"
        turn.seq = seq
        turn.on_lines(lines)
        return "delivered"

    def _on_bus(self, msg: Any) -> None:
        if not isinstance(msg, dict) or msg.get("turnId") not in self._turns:
            return
        lines = msg.get("lines")
        seq = msg.get("seq")
        if isinstance(lines, list) and isinstance(seq, int):
            self.deliver(Principal("node", node_id=str(msg.get("nodeId"))), str(msg["turnId"]), seq, lines)
