"""A stand-in for the ``claude`` CLI: reads the prompt on stdin, answers ``pong: <prompt>`` in stream-json
(after ``sleep N`` seconds when the prompt is ``sleep N``)."""

from __future__ import annotations

import json
import sys
import time

prompt = sys.stdin.read().strip().splitlines()
last = prompt[-1] if prompt else ""
if last.startswith("sleep "):  # "sleep 3": a slow turn, for the tools that wait on one
    time.sleep(float(last.split()[1]))
for event in (
    {"type": "system", "subtype": "init", "session_id": "fake-session", "model": "fake"},
    {"type": "assistant", "message": {"content": [{"type": "text", "text": f"pong: {last}"}]}},
    {"type": "result", "subtype": "success", "result": f"pong: {last}", "session_id": "fake-session"},
):
    print(json.dumps(event), flush=True)
