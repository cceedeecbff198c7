"""A stand-in for the ``claude`` CLI: reads the prompt on stdin, answers ``pong: <prompt>`` in stream-json."""

from __future__ import annotations

import json
import sys

prompt = sys.stdin.read().strip().splitlines()
last = prompt[-1] if prompt else ""
for event in (
    {"type": "system", "subtype": "init", "session_id": "fake-session", "model": "fake"},
    {"type": "assistant", "message": {"content": [{"type": "text", "text": f"pong: {last}"}]}},
    {"type": "result", "subtype": "success", "result": f"pong: {last}", "session_id": "fake-session"},
):
    print(json.dumps(event), flush=True)
