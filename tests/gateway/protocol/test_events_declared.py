"""Every event the gateway sends is declared in ``gateway/protocol/events.py``: read from the source, so an event
added anywhere without its declaration fails here (and would otherwise be missing from hello-ok)."""

from __future__ import annotations

import ast
from pathlib import Path

from gateway.protocol.events import EVENTS
from tests.support import ROOT

SENDERS = {"broadcast", "send_event", "deliver_local", "publish"}


def sent_events(root: Path) -> set[tuple[str, str]]:
    """``(file, event)`` for string-constant event names handed to a sender, or in an ``{"event": …}`` frame."""
    found = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in SENDERS
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                found.add((str(path.relative_to(root)), node.args[0].value))
            elif isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values, strict=True):
                    if (isinstance(key, ast.Constant) and key.value == "event" and isinstance(value, ast.Constant)
                            and isinstance(value.value, str)):
                        found.add((str(path.relative_to(root)), value.value))
    return found


def test_every_sent_event_is_declared() -> None:
    sent = sent_events(ROOT / "gateway") | sent_events(ROOT / "channels")
    assert len(sent) >= 10, "the scan found too few events: it is not reading the senders"
    undeclared = sorted(f"{file}: {name}" for file, name in sent if name not in EVENTS)
    assert not undeclared, "declare these in gateway/protocol/events.py:\n" + "\n".join(undeclared)


def test_the_scan_sees_each_way_of_sending(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("gw.broadcast('a', {})\nconn.send_event('b')\nbus.publish('c')\n"
                                   "conn.send({'type': 'event', 'event': 'd'})\nlog.info('e')\n")
    assert {name for _f, name in sent_events(tmp_path)} == {"a", "b", "c", "d"}
