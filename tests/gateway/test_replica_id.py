"""Processes sharing one state dir (``docker compose up --scale gateway=3`` on one volume) each get a replica name
of their own, and keep it across restarts: three real processes at once, then one again.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLAIM = ("import sys, time, pathlib; from gateway import paths; d = pathlib.Path(sys.argv[1]); "
         "print(paths.replica_id(d), paths.replica_id(d), flush=True); time.sleep(1.5)")


def claim(state: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", CLAIM, str(state)], stdout=subprocess.PIPE, text=True, cwd=ROOT)


def test_processes_on_one_state_dir_hold_different_replica_ids(tmp_path: Path) -> None:
    procs = [claim(tmp_path) for _ in range(3)]
    answers = [p.communicate(timeout=30)[0].split() for p in procs]
    assert all(len(a) == 2 and a[0] == a[1] for a in answers), answers  # one name per process, asked twice
    ids = {a[0] for a in answers}
    assert len(ids) == 3, answers
    # alone again: it takes back the first free name, one of the three (its old leases are its own)
    again = claim(tmp_path).communicate(timeout=30)[0].split()[0]
    assert again in ids
    assert (tmp_path / "replica-id").read_text().strip() == again
