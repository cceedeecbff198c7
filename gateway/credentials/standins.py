"""Stand-in credentials: what a run holds instead of an API key or a login, checked against the live run.

Issued where the run's token is issued and revoked where it is (``gateway.agents.executor``), so a stand-in is
dead the moment its run ends; stored by SHA-256 like run tokens (``gateway.agents.tokens``). A stand-in names
its run, person and session, and the upstreams the gateway forwards it to (with the real credential).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.credentials.clis import Upstream

__all__ = ["StandIn", "StandIns"]

PREFIX = "rcm-"


@dataclass(slots=True)
class StandIn:
    """What one stand-in lets through: its run's upstreams, and whose use it is."""

    run_id: str
    agent_id: str
    session_key: str
    person_id: str | None
    owner: bool
    upstreams: dict[str, Upstream]
    usage: dict[str, int] = field(default_factory=lambda: {"input": 0, "output": 0, "cacheRead": 0,
                                                            "cacheWrite": 0})
    """What the upstream's answers stated so far in this run (``wire``)."""
    cost_usd: float = 0.0
    model: str | None = None
    stopped: str | None = None
    """Why the model gateway stopped this run (its budget), said in the chat."""


class StandIns:
    def __init__(self) -> None:
        self._live: dict[str, StandIn] = {}

    @staticmethod
    def _key(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()

    def issue(self, grant: StandIn) -> str:
        token = PREFIX + secrets.token_urlsafe(32)
        self._live[self._key(token)] = grant
        return token

    def revoke(self, token: str) -> StandIn | None:
        return self._live.pop(self._key(token), None)

    def find(self, given: str | None) -> StandIn | None:
        """The live stand-in ``given`` is, or None (unknown, or its run has ended)."""
        return self._live.get(self._key(given)) if given and given.startswith(PREFIX) else None

    def live(self) -> list[StandIn]:
        return list(self._live.values())
