"""One agent turn with one runtime: spawn, parse, collect, and retry afresh if the resume id is stale."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, cast

from gateway.agents.runtimes.base import Event, Invocation, RunSpec, Runtime
from gateway.agents.runtimes.process import ProcessResult, StdinFeed, run_process

__all__ = ["ProcessRunner", "SelfDriven", "TurnResult", "run_turn"]


class SelfDriven(Protocol):
    """A runtime with ``self_driven`` set: it talks to the (confined) invocation's process itself, run by
    ``process`` (here, or on a node), and hands over its events."""

    async def drive(self, inv: Invocation, spec: RunSpec, emit: Callable[[Event], None], *,
                    no_output_timeout: float, on_spawn: Callable[[float], None] | None,
                    process: ProcessRunner | None = None) -> ProcessResult: ...


class ProcessRunner(Protocol):
    """What runs a built invocation and hands each output object on: ``run_process`` here, or a node that hosts the
    turn (``gateway.agent_hosts``), which runs it on its own machine and streams its lines back."""

    async def __call__(self, inv: Invocation, on_object: Callable[[dict], None], *, no_output_timeout: float,
                       on_spawn: Callable[[float], None] | None = None,
                       feed: StdinFeed | None = None) -> ProcessResult: ...


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


def _replies_of(events: list[Event]) -> str:
    """The reply of a turn: of each answer (one per ``done``; several when messages steered the turn), joined."""
    replies: list[str] = []
    start = 0
    for i, ev in enumerate(events):
        if ev.kind == "done":
            text = _reply_of(events[start:i], ev.text)
            if text:
                replies.append(text)
            start = i + 1
    return "\n\n".join(replies)


async def _attempt(runtime: Runtime, spec: RunSpec, on_event: Callable[[Event], None], *,
                   no_output_timeout: float, on_spawn: Callable[[float], None] | None,
                   feed: StdinFeed | None = None, process: ProcessRunner | None = None) -> TurnResult:
    parser = runtime.parser()
    events: list[Event] = []

    def emit(ev: Event) -> None:
        events.append(ev)
        on_event(ev)
        if ev.kind == "done" and feed is not None:
            feed.answered_one()  # the last answer owed closes stdin, and the CLI ends

    def handle(obj: dict) -> None:
        for ev in parser.feed(obj):
            emit(ev)

    inv = runtime.build(spec)
    inv.pass_env = (*(runtime.credential_env if spec.fronted is None else ()), *spec.pass_env)
    # a conversation with the CLI (JSON-RPC over stdio), not steering; a self-driven runtime holds its own
    if inv.keep_stdin and feed is None and not runtime.self_driven:
        feed = StdinFeed()
    if feed is not None:
        parser.talk(feed, spec)
    try:
        if spec.confine is not None:
            inv = spec.confine(inv)
        if runtime.self_driven:  # the runtime talks to its CLI through a library (ACP's SDK): it runs the process
            proc = await cast(SelfDriven, runtime).drive(inv, spec, emit, no_output_timeout=no_output_timeout,
                                                         on_spawn=on_spawn, process=process)
        else:
            proc = await (process or run_process)(inv, handle, no_output_timeout=no_output_timeout, on_spawn=on_spawn,
                                                  feed=feed)
    except (FileNotFoundError, PermissionError) as exc:
        from gateway.agents.invocation import missing_cli

        return TurnResult(ok=False, error=missing_cli(runtime.name, inv.argv[0],
                                                      denied=isinstance(exc, PermissionError)))
    for ev in parser.finish():
        events.append(ev)
        on_event(ev)
    done = next((e for e in reversed(events) if e.kind == "done"), None)
    errors = [e.text for e in events if e.kind == "error" and e.text]
    dones = [e for e in events if e.kind == "done"]
    usage: dict[str, int] = {}
    for d in dones:  # a steered turn answers several messages: one ``done`` each, each with its own tokens
        for k, v in (d.usage or {}).items():
            usage[k] = usage.get(k, 0) + v
    # Claude Code's ``total_cost_usd`` counts the whole process, so the last stated cost is the turn's.
    cost = next((d.cost_usd for d in reversed(dones) if d.cost_usd is not None), None)
    res = TurnResult(ok=False, events=events, process=proc,
                     session_id=(done.session_id if done else None) or parser.session_id,
                     usage=usage, model=done.model if done else None, cost_usd=cost)
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
        res.reply = _replies_of(events)
    return res


async def run_turn(runtime: Runtime, spec: RunSpec, on_event: Callable[[Event], None], *,
                   no_output_timeout: float, on_spawn: Callable[[float], None] | None = None,
                   feed: StdinFeed | None = None, process: ProcessRunner | None = None) -> TurnResult:
    """Run one turn; if a resumed session turns out to be gone, run it once more as a new session.

    ``feed``: with ``spec.steer``, the handle through which more user messages reach the running CLI.
    ``process``: what runs the built command (default: a child process here)."""
    res = await _attempt(runtime, spec, on_event, no_output_timeout=no_output_timeout, on_spawn=on_spawn, feed=feed,
                         process=process)
    if res.ok or not spec.resume_id or res.process is None or res.process.watchdog_fired:
        return res
    evidence = " ".join(filter(None, [res.error or "", res.process.stderr_tail, *res.process.stdout_noise]))
    if not runtime.session_expired(evidence):
        return res
    spec.resume_id = None
    fresh = await _attempt(runtime, spec, on_event, no_output_timeout=no_output_timeout, on_spawn=None, feed=feed,
                           process=process)
    fresh.retried_fresh = True
    return fresh
