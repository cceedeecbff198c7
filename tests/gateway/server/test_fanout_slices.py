"""A broadcast to many sockets is written a slice at a time, in order, and leaves the loop free in between."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson

from gateway.protocol import event_head
from gateway.server.fanout import SLICE, FanOut
from tests.gateway.server.test_fanout import Peer, _enough_files, _join_many  # noqa: F401 (the fixture, autouse)
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import operator


class Socket:
    """A receiver that records what it got, and when (relative to other work on the loop)."""

    def __init__(self, log: list[str], name: str) -> None:
        self.closed = False
        self.got: list[str] = []
        self._log, self._name = log, name

    def send_event_head(self, head: str, *, drop_if_slow: bool = False) -> bool:
        self.got.append(head)
        self._log.append(self._name)
        return True


def _spawn(work, name):  # type: ignore[no-untyped-def]
    return asyncio.get_running_loop().create_task(work, name=name)


async def test_a_large_broadcast_yields_between_slices_and_later_ones_keep_their_order() -> None:
    log: list[str] = []
    sockets = [Socket(log, f"s{i}") for i in range(3 * SLICE + 5)]
    fanout = FanOut(_spawn)
    asyncio.get_running_loop().call_soon(log.append, "other work")
    assert fanout.send("first", sockets) == len(sockets)  # counted now, written over several turns of the loop
    assert fanout.send("second", sockets[:3]) == 3  # small, but queued behind the first
    await asyncio.sleep(0.05)  # a few turns of the loop: four slices, then the small one
    assert fanout.queued == 0
    assert "other work" in log and log.index("other work") < len(sockets)  # ran before the last slice
    assert all(s.got == ["first", "second"] for s in sockets[:3])
    assert all(s.got == ["first"] for s in sockets[3:])
    small = [Socket(log, "x")]
    log.clear()
    assert fanout.send("third", small) == 1 and log == ["x"]  # nothing queued: written at once, as before


async def test_every_client_of_hundreds_gets_every_event_once_in_the_same_order(tmp_path: Path) -> None:
    """Probes broadcast back to back to 300 sockets (over two slices each): none lost, none doubled, the same
    order on every socket, consecutive sequence numbers."""
    gw = GatewayProcess(tmp_path / "gw")
    gw.start()
    try:
        token = gw.token or ""
        admin = await operator(gw.url, token)
        joined = await _join_many(gw.url, token, 300, batch=25, pause=0.05)  # under the log-in cap on a loaded machine
        peers = [p for p in joined if isinstance(p, Peer)]
        assert len(peers) == 300, sorted({repr(p)[:200] for p in joined if not isinstance(p, Peer)})
        answers = await asyncio.gather(*(admin.req("hooks.tool.before", {"toolName": "order_probe",
                                                                         "params": {"n": n}}) for n in range(30)))
        assert all(a["ok"] and a["payload"]["delivered"] >= 300 for a in answers), answers[0]
        for _ in range(100):
            if all(sum(1 for name, _ in p.events if name == "hooks.tool") >= 30 for p in peers):
                break
            await asyncio.sleep(0.1)
        orders = set()
        for peer in peers:
            frames = [orjson.loads(text) for name, text in peer.events if name == "hooks.tool"]
            orders.add(tuple(f["payload"]["params"]["n"] for f in frames))
            seqs = [orjson.loads(text)["seq"] for _, text in peer.events]
            assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), seqs  # no gap, no repeat
        assert len(orders) == 1 and sorted(next(iter(orders))) == list(range(30)), orders
        await asyncio.gather(admin.close(), *(p.close() for p in peers))
    finally:
        gw.stop()


def test_event_head_is_what_the_slices_send() -> None:
    frame = orjson.loads(event_head("tick", {"ts": 1}) + "7}")
    assert frame == {"type": "event", "event": "tick", "payload": {"ts": 1}, "seq": 7}
