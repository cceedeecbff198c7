"""One agent turn with one runtime: spawn, parse, collect, and retry afresh if the resume id is stale."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from gateway.agents.runtimes.base import Event, RunSpec, Runtime
from gateway.agents.runtimes.process import ProcessResult, run_process

__all__ = ["TurnResult", "run_turn"]


@dataclass(slots=True)
class TurnResult:
    ok: bool
    reply: str = ""
    error: str | None = None
    session_id: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    model: str | None = None
    cost_usd: float | None = None
    events: list[Event] = field(default_factory=list)
    retried_fresh: bool = False
    process: ProcessResult | None = None


def _reply_of(events: list[Event], stated: str) -> str:
    """The final reply: what the CLI says it is, else the text written after the last tool call."""
    if stated.strip():
        return stated.strip()
    texts: list[str] = []
    for ev in events:
        if ev.kind in ("tool_use", "tool_result"):
            texts = []
        elif ev.kind == "text":
            texts.append(ev.text)
    if not texts:
        texts = [ev.text for ev in events if ev.kind == "text"]
    return "\n\n".join(t.strip() for t in texts if t.strip())


async def _attempt(runtime: Runtime, spec: RunSpec, on_event: Callable[[Event], None], *,
                   no_output_timeout: float, on_spawn: Callable[[float], None] | None) -> TurnResult:
    parser = runtime.parser()
    events: list[Event] = []

    def handle(obj: dict) -> None:
        for ev in parser.feed(obj):
            events.append(ev)
            on_event(ev)

    inv = runtime.build(spec)
    try:
        proc = await run_process(inv, handle, no_output_timeout=no_output_timeout, on_spawn=on_spawn)
    except (FileNotFoundError, PermissionError) as exc:
        return TurnResult(ok=False, error=f"cannot start {runtime.name} ({inv.argv[0]}): {exc.strerror}; is it "
                          "installed for the gateway's user? (agents.list[].command overrides the path)")
    for ev in parser.finish():
        events.append(ev)
        on_event(ev)
    done = next((e for e in reversed(events) if e.kind == "done"), None)
    errors = [e.text for e in events if e.kind == "error" and e.text]
    res = TurnResult(ok=False, events=events, process=proc,
                     session_id=(done.session_id if done else None) or parser.session_id,
                     usage=(done.usage or {}) if done else {}, model=done.model if done else None,
                     cost_usd=done.cost_usd if done else None)
    if proc.watchdog_fired:
        res.error = f"the agent produced no output for {int(no_output_timeout)}s and was stopped"
    elif done is None or done.is_error or (errors and not _reply_of(events, done.text if done else "")):
        detail = errors[-1] if errors else (proc.stderr_tail.splitlines()[-1] if proc.stderr_tail else "")
        if not detail and proc.stdout_noise:
            detail = proc.stdout_noise[-1]
        code = f"exit code {proc.returncode}" if proc.returncode else "no result"
        res.error = f"{runtime.name} failed ({code})" + (f": {detail[:300]}" if detail else "")
    elif proc.returncode not in (0, None) and not _reply_of(events, done.text):
        res.error = f"{runtime.name} exited with code {proc.returncode}"
    else:
        res.ok = True
        res.reply = _reply_of(events, done.text)
    return res


async def run_turn(runtime: Runtime, spec: RunSpec, on_event: Callable[[Event], None], *,
                   no_output_timeout: float, on_spawn: Callable[[float], None] | None = None) -> TurnResult:
    """Run one turn; if a resumed session turns out to be gone, run it once more as a new session."""
    res = await _attempt(runtime, spec, on_event, no_output_timeout=no_output_timeout, on_spawn=on_spawn)
    if res.ok or not spec.resume_id or res.process is None or res.process.watchdog_fired:
        return res
    evidence = " ".join(filter(None, [res.error or "", res.process.stderr_tail, *res.process.stdout_noise]))
    if not runtime.session_expired(evidence):
        return res
    spec.resume_id = None
    fresh = await _attempt(runtime, spec, on_event, no_output_timeout=no_output_timeout, on_spawn=None)
    fresh.retried_fresh = True
    return fresh
