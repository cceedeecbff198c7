"""The disk under a SQLite gateway fills up: writes are refused clearly, nothing is corrupted, it recovers.

The gateway's whole state dir (database, logs, token) is on an 8 MB tmpfs of the test's own, which a big
file then fills to the last byte. What a client sees: a write answers an error naming the full disk
(``DISK_FULL``), not a crash and not "internal error"; reads keep working. What is kept: the database
(``PRAGMA integrity_check`` says ok) and every write answered ok before. When the file is deleted, writes
work again without a restart.

Mounting needs root and ``CAP_SYS_ADMIN``; without them the test is skipped, saying which is missing.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import FAKE_CLI
from tests.support.gateway_proc import GatewayProcess
from tests.support.waiting import until
from tests.support.ws import RawClient, operator

pytestmark = [pytest.mark.timeout(90)]


@pytest.fixture
def small_disk() -> Iterator[Path]:
    """An 8 MB tmpfs, unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs for the full-disk test needs root")
    where = Path(tempfile.mkdtemp(prefix="rc-faults-disk-"))
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(where)], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        where.rmdir()
        pytest.skip(f"cannot mount a tmpfs here (no CAP_SYS_ADMIN?): {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)
        with contextlib.suppress(OSError):
            where.rmdir()


def _fill(path: Path) -> None:
    """Write zeros until the filesystem has no byte left."""
    chunk = b"\0" * 65536
    with path.open("wb", buffering=0) as fh:
        while True:
            try:
                fh.write(chunk)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc
                break
    with path.open("ab", buffering=0) as fh:  # the last partial block
        for _ in range(65536):
            try:
                fh.write(b"\0")
            except OSError:
                break


async def _patch(c: RawClient, i: int) -> dict[str, Any]:
    return await c.req("sessions.patch", {"key": f"agent:main:faults:disk{i}", "label": f"disk label {i}"}, timeout=20)


async def test_a_full_disk_refuses_writes_clearly_keeps_the_database_whole_and_recovers(small_disk: Path) -> None:
    cfg = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]}}
    with GatewayProcess(small_disk / "state", config=cfg) as gw:
        c = await operator(gw.url, gw.token or "")
        kept = [await _patch(c, i) for i in range(5)]
        assert all(f["ok"] for f in kept), kept
        filler = small_disk / "filler.bin"
        _fill(filler)

        answers = []
        for i in range(5, 60):  # the WAL may still have room for a few; sooner or later one needs space
            answers.append(await _patch(c, i))
            if not answers[-1]["ok"]:
                break
        refused = [a for a in answers if not a["ok"]]
        assert refused, "every write succeeded on a full disk: the test proved nothing"
        err = refused[0]["error"]
        assert err["code"] == "UNAVAILABLE" and err["details"]["code"] == "DISK_FULL", err
        assert "disk is full" in err["message"], err
        sent = await c.req("chat.send", {"sessionKey": "agent:main:faults:diskchat", "message": "hello",
                                         "idempotencyKey": "disk-full-chat"}, timeout=20)
        assert not sent["ok"] and sent["error"]["details"]["code"] == "DISK_FULL", sent  # refused, not lost later
        # Reads keep working, and the gateway is up.
        listed = await c.call("sessions.list", {"limit": 100})
        labels = {s.get("label") for s in listed["sessions"]}
        ok_before = {f"disk label {i}" for i, a in enumerate([*kept, *answers]) if a["ok"]}
        assert ok_before <= labels, (ok_before, labels)
        assert (await c.call("health"))["ok"] is True
        assert gw.proc is not None and gw.proc.poll() is None

        filler.unlink()  # space is back: writes work again, without a restart
        again = await until(lambda: _ok(c, 100), 15, "a write to succeed once space returned")
        assert again["ok"]
        sent = await c.call("chat.send", {"sessionKey": "agent:main:faults:diskchat", "message": "hello again",
                                          "idempotencyKey": "disk-full-chat-2"})
        done = await c.call("agent.wait", {"runId": sent["runId"], "timeoutMs": 15000}, timeout=20)
        assert done["status"] == "ok" and done["reply"] == "echo: hello again", done
        await c.close()
    with sqlite3.connect(small_disk / "state" / "remoteclaw.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        labels = {r[0] for r in db.execute("SELECT label FROM sessions WHERE label IS NOT NULL")}
    assert ok_before | {"disk label 100"} <= labels


async def _ok(c: RawClient, i: int) -> dict[str, Any] | None:
    frame = await _patch(c, i)
    return frame if frame["ok"] else None
