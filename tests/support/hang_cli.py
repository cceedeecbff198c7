"""A stand-in agent CLI that starts a helper child (as a CLI starts its MCP server), records both
pids, prints one stream-json event and then hangs: the far side for the orphan tests."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

if __name__ == "__main__":
    sys.stdin.read()
    if os.environ.get("HANG_CLI_IGNORE_TERM"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(os.environ["HANG_CLI_PIDS"], "a") as fh:
        fh.write(json.dumps({"cli": os.getpid(), "child": child.pid,
                             "run": os.environ.get("REMOTECLAW_RUN_ID")}) + "\n")
    sys.stdout.write(json.dumps({"type": "system", "subtype": "init", "session_id": "s1", "model": "m"}) + "\n")
    sys.stdout.flush()
    time.sleep(600)
