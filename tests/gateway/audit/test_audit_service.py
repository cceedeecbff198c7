"""The audit service built from its constructor (fast tier): a real migrated SQLite file and config store.

Who a caller is in one string, what ``details`` keep (no secret, nothing huge), times as the method takes them, and
that a failed write costs the log its row but never raises into the action it records.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

from gateway.audit.actors import actor_of, kind_of
from gateway.audit.methods import parse_when
from gateway.audit.service import MAX_DETAILS_BYTES, AuditService, details_json
from gateway.audit.store import Cursor, Filter
from gateway.config import ConfigStore
from gateway.config.model import validate
from gateway.dispatch.callers import Caller, SessionScope
from gateway.logs import sink
from gateway.store import Database

pytestmark = pytest.mark.timeout(60)


def caller(**kw: object) -> Caller:
    base: dict[str, object] = {"conn_id": "c1", "role": "operator", "scopes": frozenset(), "client_id": "test",
                               "client_mode": "test", "remote": "127.0.0.1"}
    return Caller(**{**base, **kw})  # type: ignore[arg-type]


def test_each_kind_of_caller_has_its_short_name() -> None:
    assert actor_of(caller()) == ("operator:test@127.0.0.1", "operator")
    assert actor_of(caller(client_id="cli", client_mode="cli")) == ("cli", "cli")
    assert actor_of(caller(client_id="cli", client_mode="cli", remote="::1")) == ("cli", "cli")
    assert actor_of(caller(client_id="cli", client_mode="cli", remote="10.0.0.7")) == ("cli@10.0.0.7", "cli")
    assert actor_of(caller(device_id="0123456789abcdef")) == ("device:01234567", "device")
    assert actor_of(caller(role="node", device_id="fedcba9876543210")) == ("node:fedcba98", "node")
    owner_run = caller(client_id="remoteclaw-mcp", reach=("/w",), run_session="agent:main:telegram:direct:42")
    assert actor_of(owner_run) == ("agent-run:agent:main:telegram:direct:42", "agent-run")
    confined = caller(reach=("/w",), confined_to=SessionScope("agent:main:x"))
    assert actor_of(confined) == ("agent-run:agent:main:x", "agent-run")
    remote_mcp = caller(client_id="remoteclaw-mcp-http", display_name="mcp token laptop")
    assert actor_of(remote_mcp) == ("mcp-token:laptop", "mcp-token")
    assert actor_of(caller(conn_id="plugin:memory")) == ("plugin:memory", "plugin")
    assert kind_of("person:ab12") == "person" and kind_of("sender:telegram:42") == "sender"
    assert kind_of("cli@10.0.0.7") == "cli" and kind_of("whoever") == "system"


def test_details_keep_no_secret_and_nothing_huge() -> None:
    sink.add_secret("known-secret-value-77")
    stored = orjson.loads(details_json({"apiKey": "sk-1", "env": {"ANY": "sk-2"}, "url": "redis://:pw@host",
                                        "note": "has known-secret-value-77 inside", "count": 3, "unset": None}) or "")
    assert stored == {"apiKey": "__REMOTECLAW_REDACTED__", "env": {"ANY": "__REMOTECLAW_REDACTED__"},
                      "url": "__REMOTECLAW_REDACTED__", "note": "has *** inside", "count": 3}
    assert details_json(None) is None and details_json({"unset": None}) is None
    big = details_json({"patch": {"x": "y" * 20_000}, "sections": ["agents"]}) or ""
    assert len(big) <= MAX_DETAILS_BYTES
    assert orjson.loads(big) == {"patch": "(20008 bytes)", "sections": ["agents"], "truncated": True}


def test_times_are_ms_iso_or_an_age() -> None:
    now = 1_800_000_000_000
    assert parse_when(now) == now
    assert parse_when("7d", now) == now - 7 * 86_400_000 and parse_when("30m", now) == now - 1_800_000
    assert parse_when("2026-11-01T09:00:00Z") == parse_when("2026-11-01T10:00:00+01:00") == 1_793_523_600_000
    assert parse_when("2026-11-01") == 1_793_491_200_000  # no zone: UTC
    with pytest.raises(ValueError, match="'soon' is not a time"):
        parse_when("soon")
    with pytest.raises(ValueError, match="before 1970"):
        parse_when(-1)


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[AuditService]:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'state.db'}")
    await db.migrate()
    store = ConfigStore(tmp_path / "remoteclaw.json")
    store.config = validate({})
    yield AuditService(db, store)
    await db.close()


async def test_a_failed_write_is_logged_and_never_raised(service: AuditService, tmp_path: Path) -> None:
    await service.record(caller(), "config.patch", None, {"sections": ["cron"]})
    with sqlite3.connect(tmp_path / "state.db") as conn:
        conn.execute("DROP TABLE audit_events")
    await service.record("person:ab12", "people.add", "person:cd34")  # no table: logged, not raised
    await service.prune_quietly()


async def test_recorded_events_read_back_newest_first(service: AuditService) -> None:
    await service.record(caller(), "config.patch", None, {"sections": ["cron"]})
    await service.record("person:ab12", "people.role", "person:cd34", {"role": "admin"})
    events, cursor = await service.page(Filter(), 10)
    assert cursor is None
    assert [(e["action"], e["actor"], e["actorKind"], e["target"]) for e in events] == [
        ("people.role", "person:ab12", "person", "person:cd34"),
        ("config.patch", "operator:test@127.0.0.1", "operator", None)]
    first, cursor = await service.page(Filter(), 1)
    assert cursor is not None and first == events[:1]
    rest, _ = await service.page(Filter(before=Cursor.parse(cursor)), 10)
    assert rest == events[1:]
