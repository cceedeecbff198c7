"""A cron job's definition, validated: what ``cron.add`` takes and ``cron.update`` patches.

The shape is OpenClaw's, so its clients work unchanged::

    {"name": "inbox digest", "schedule": {"kind": "cron", "expr": "0 9 * * 1-5", "tz": "Europe/Berlin"},
     "sessionTarget": "isolated", "payload": {"kind": "agentTurn", "message": "Summarise my inbox"},
     "delivery": {"mode": "announce", "channel": "telegram", "to": "123456"}}

Every error names the field it is about (``payload.message``, ``delivery.to``, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from gateway.cron.schedule import Schedule, ScheduleError, parse_schedule
from gateway.protocol import InvalidRequest

__all__ = ["REDACTED", "JobSpec", "validate_job", "validate_patch"]

PATCHABLE = frozenset({"name", "description", "agentId", "enabled", "schedule", "sessionTarget", "payload",
                       "delivery", "failureAlert", "deleteAfterRun", "wakeMode"})
KNOWN = PATCHABLE | {"id", "jobId"}
MAX_TEXT = 20_000
REDACTED = "********"


def _bad(field: str, message: str) -> InvalidRequest:
    return InvalidRequest(f"{field}: {message}", details={"field": field})


def _text(raw: dict[str, Any], key: str, field: str, *, required: bool, limit: int = MAX_TEXT) -> str | None:
    value = raw.get(key)
    if value is None:
        if required:
            raise _bad(field, "required")
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise _bad(field, "expected a non-empty string")
    if len(value) > limit:
        raise _bad(field, f"longer than {limit} characters")
    return value


def _payload(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise _bad("payload", "expected {kind: agentTurn, message} or {kind: systemEvent, text}")
    kind = raw.get("kind")
    if kind == "agentTurn":
        out: dict[str, Any] = {"kind": kind, "message": _text(raw, "message", "payload.message", required=True)}
        timeout = raw.get("timeoutSeconds")
        if timeout is not None:
            if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 1 <= timeout <= 86_400:
                raise _bad("payload.timeoutSeconds", "expected seconds between 1 and 86400")
            out["timeoutSeconds"] = timeout
        for key in ("model", "thinking"):  # accepted for compatibility; the agent's config decides
            if isinstance(raw.get(key), str):
                out[key] = raw[key]
        return out
    if kind == "systemEvent":
        return {"kind": kind, "text": _text(raw, "text", "payload.text", required=True)}
    raise _bad("payload.kind", f"expected agentTurn or systemEvent, got {kind!r}")


def _delivery(raw: Any) -> dict[str, Any] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise _bad("delivery", "expected {mode: none|announce|webhook, ...}")
    mode = raw.get("mode", "announce")
    if mode not in ("none", "announce", "webhook"):
        raise _bad("delivery.mode", f"expected none, announce or webhook, got {mode!r}")
    out: dict[str, Any] = {"mode": mode}
    for key in ("channel", "to", "accountId", "threadId", "token"):
        value = raw.get(key)
        if value is not None:
            if isinstance(value, int) and not isinstance(value, bool) and key in ("to", "threadId"):
                value = str(value)
            if not isinstance(value, str) or not value.strip() or len(value) > 2000:
                raise _bad(f"delivery.{key}", "expected a non-empty string")
            out[key] = value
    if "bestEffort" in raw:
        if not isinstance(raw["bestEffort"], bool):
            raise _bad("delivery.bestEffort", "expected true or false")
        out["bestEffort"] = raw["bestEffort"]
    if mode == "webhook":
        url = out.get("to") or raw.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise _bad("delivery.to", "a webhook delivery needs the URL to POST to (http or https)")
        out["to"] = url
    if out.get("channel") == "last":
        if "to" in out:
            raise _bad("delivery.to", "channel last means the chat the session last used: leave to out")
    elif mode == "announce" and ("channel" in out) != ("to" in out):
        raise _bad("delivery.to" if "channel" in out else "delivery.channel",
                   "give both channel and to, or channel last (or neither): then the session's last chat gets it")
    return out


def _failure_alert(raw: Any) -> dict[str, Any] | None:
    if raw is None or raw is False:
        return None
    if not isinstance(raw, dict):
        raise _bad("failureAlert", "expected {after?, channel?, to?}")
    out: dict[str, Any] = {}
    after = raw.get("after")
    if after is not None:
        if isinstance(after, bool) or not isinstance(after, int) or after < 1:
            raise _bad("failureAlert.after", "expected a whole number of failures, at least 1")
        out["after"] = after
    for key in ("channel", "to", "accountId"):
        if raw.get(key) is not None:
            if not isinstance(raw[key], str | int) or isinstance(raw[key], bool):
                raise _bad(f"failureAlert.{key}", "expected a string")
            out[key] = str(raw[key])
    return out


def _target(raw: Any, payload_kind: str) -> str:
    if raw == "current":  # OpenClaw: the session that created the job; without one, an isolated session
        raw = None
    if raw is None:
        return "main" if payload_kind == "systemEvent" else "isolated"
    if not isinstance(raw, str) or not (raw in ("main", "isolated") or (raw.startswith("session:") and len(raw) > 8)):
        raise _bad("sessionTarget", "expected main, isolated or session:<key>")
    if payload_kind == "systemEvent" and raw != "main":
        raise _bad("sessionTarget", "a systemEvent payload goes to the main session (sessionTarget: main)")
    return raw


WAKE_MODES = ("now", "next-heartbeat")


def _wake_mode(raw: Any) -> str:
    """OpenClaw's ``wakeMode``: ``now`` (the default, what its CLI sends) runs a main-session job's turn at
    its time; ``next-heartbeat`` queues its event for the agent's next heartbeat turn."""
    if raw is None:
        return "now"
    if raw not in WAKE_MODES:
        raise _bad("wakeMode", f"expected now or next-heartbeat, got {raw!r}")
    return str(raw)


def _bool(raw: dict[str, Any], key: str, default: bool) -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        raise _bad(key, "expected true or false")
    return value


@dataclass(frozen=True, slots=True)
class JobSpec:
    """A validated definition, as stored."""

    name: str
    description: str | None
    agent_id: str | None
    enabled: bool
    schedule: Schedule
    session_target: str
    payload: dict[str, Any]
    delivery: dict[str, Any] | None
    failure_alert: dict[str, Any] | None
    delete_after_run: bool
    wake_mode: str = "now"

    def columns(self) -> dict[str, Any]:
        dump = orjson.dumps
        return {
            "name": self.name, "description": self.description, "agent_id": self.agent_id, "enabled": self.enabled,
            "schedule": dump(self.schedule.to_dict()).decode(), "session_target": self.session_target,
            "payload": dump(self.payload).decode(),
            "delivery": dump(self.delivery).decode() if self.delivery else None,
            "failure_alert": dump(self.failure_alert).decode() if self.failure_alert else None,
            "delete_after_run": self.delete_after_run, "wake_mode": self.wake_mode,
        }


def validate_job(raw: dict[str, Any], *, now_ms: int, agent_ids: list[str],
                 heartbeat_agents: frozenset[str] | None = None, default_agent: str | None = None) -> JobSpec:
    """Check a whole job definition. ``heartbeat_agents``: the agents with a heartbeat configured (a
    ``next-heartbeat`` job of any other agent would never wake, so it is refused); None skips that check.
    ``default_agent`` is the agent of a job that names none.

    Raises:
        InvalidRequest: naming the field that is wrong.
    """
    unknown = sorted(set(raw) - KNOWN)
    if unknown:
        raise _bad(unknown[0], f"unknown field (known: {', '.join(sorted(PATCHABLE))})")
    name = _text(raw, "name", "name", required=True, limit=200)
    assert name is not None
    agent_id = _text(raw, "agentId", "agentId", required=False, limit=128)
    if agent_id is not None and agent_id not in agent_ids:
        raise _bad("agentId", f"no agent {agent_id!r} (agents: {', '.join(agent_ids)})")
    try:
        schedule = parse_schedule(raw.get("schedule"), now_ms=now_ms)
    except ScheduleError as exc:
        raise _bad(exc.field, str(exc).split(": ", 1)[1]) from exc
    payload = _payload(raw.get("payload"))
    session_target = _target(raw.get("sessionTarget"), payload["kind"])
    wake_mode = _wake_mode(raw.get("wakeMode"))
    if wake_mode == "next-heartbeat":
        if session_target != "main":
            raise _bad("wakeMode", "next-heartbeat waits for the main session's heartbeat, so it needs sessionTarget "
                                   "main (other jobs run at their time: use now)")
        agent = agent_id or default_agent
        if heartbeat_agents is not None and agent not in heartbeat_agents:
            raise _bad("wakeMode", f"agent {agent!r} has no heartbeat (agents.list[].heartbeat), so next-heartbeat "
                                   "would never wake: configure one or use now")
    return JobSpec(
        name=name.strip(), description=_text(raw, "description", "description", required=False, limit=2000),
        agent_id=agent_id, enabled=_bool(raw, "enabled", True), schedule=schedule,
        session_target=session_target, payload=payload, wake_mode=wake_mode,
        delivery=_delivery(raw.get("delivery")), failure_alert=_failure_alert(raw.get("failureAlert")),
        delete_after_run=_bool(raw, "deleteAfterRun", False),
    )


def validate_patch(current: dict[str, Any], patch: dict[str, Any], *, now_ms: int,
                   agent_ids: list[str], heartbeat_agents: frozenset[str] | None = None,
                   default_agent: str | None = None) -> JobSpec:
    """Apply ``patch`` to a job's current definition (``to_dict`` shape) and check the result."""
    unknown = sorted(set(patch) - PATCHABLE)
    if unknown:
        raise _bad(f"patch.{unknown[0]}", f"cannot be changed (changeable: {', '.join(sorted(PATCHABLE))})")
    merged = {k: v for k, v in current.items() if k in PATCHABLE}
    for key, value in patch.items():
        if key in ("payload", "delivery") and isinstance(value, dict) and isinstance(merged.get(key), dict) \
                and value.get("kind", merged[key].get("kind")) == merged[key].get("kind"):
            merged[key] = {**merged[key], **value}  # a partial payload or delivery keeps the rest
        else:
            merged[key] = value
    delivery = merged.get("delivery")
    if isinstance(delivery, dict) and delivery.get("token") == REDACTED:  # a read-back sent back unchanged
        old = (current.get("delivery") or {}).get("token")
        merged["delivery"] = {**delivery, "token": old} if old else {k: v for k, v in delivery.items() if k != "token"}
    return validate_job(merged, now_ms=now_ms, agent_ids=agent_ids, heartbeat_agents=heartbeat_agents,
                        default_agent=default_agent)
