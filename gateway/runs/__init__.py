"""Agent runs as the gateway schedules them, independent of how a run is executed:

- ``model``: what a run is (its request, origin, state and result), plain data;
- ``queue``: ``RunQueue``, one turn at a time per session, collection of messages that arrive
  meanwhile, the global cap, timeout, abort and ``agent.wait``;
- ``lease``: the per-session database lease that keeps one turn per session across replicas.
"""

from __future__ import annotations

from gateway.runs.queue import RunQueue
from gateway.runs.run import FINISHED, Origin, Run, RunOutcome, RunRequest

__all__ = ["FINISHED", "Origin", "Run", "RunOutcome", "RunQueue", "RunRequest"]
