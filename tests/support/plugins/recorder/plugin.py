"""A test plugin: records every hook event to ``config.file`` (one JSON line each, with the hook name).

``context`` is prepended to prompts (``before_agent_start``), ``suffix`` appended to outgoing messages
(``message_sending``, which also cancels a text containing "cancel me"); a tool call whose ``name`` param is
"rewrite me" gets ``{"name": "Rewritten"}`` instead; hooks named in ``raiseIn`` raise and those in
``stallIn`` sleep for a minute, after recording, so the tests can check that such a hook is skipped and
never stops the gateway; those in ``holdIn`` block the event loop itself for 0.8 s (``time.sleep``: the
mistake the loop watch is there to find).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from gateway.hooks.runner import HOOKS


def _append(path: str, line: str) -> None:
    with open(path, "a") as fh:
        fh.write(line + "\n")


def register(api: Any) -> None:
    path = api.config["file"]
    raise_in = set(api.config.get("raiseIn", []))
    stall_in = set(api.config.get("stallIn", []))
    hold_in = set(api.config.get("holdIn", []))

    def make(hook: str) -> Any:
        async def handler(event: dict[str, Any]) -> Any:
            _append(path, json.dumps({"hook": hook, **event}, default=str))
            if hook == "before_tool_call" and (event.get("params") or {}).get("name") == "rewrite me":
                return {"params": {"name": "Rewritten"}}
            if hook == "message_sending" and "cancel me" in event["content"]:
                return {"cancel": True, "reason": "the text asked for it"}
            if hook in raise_in:
                raise RuntimeError(f"recorder raises in {hook}")
            if hook in stall_in:
                await asyncio.sleep(60)
            if hook in hold_in:
                time.sleep(0.8)  # noqa: ASYNC251 (on purpose: a hook that holds the loop)
            if hook == "before_agent_start" and api.config.get("context"):
                return {"prependContext": api.config["context"]}
            if hook == "message_sending" and api.config.get("suffix"):
                return {"content": event["content"] + api.config["suffix"]}
            return None
        return handler

    for hook in HOOKS:
        api.on(hook, make(hook), timeout_s=1.0 if hook in stall_in else None)
