"""Stand-in credentials: what a run holds instead of an API key or a login, checked against the live run.

Issued where the run's token is issued and revoked where it is (``gateway.agents.executor``), so a stand-in is
dead the moment its run ends; stored by SHA-256 like run tokens (``gateway.agents.tokens``). A stand-in names
its run, person and session, and the upstreams the gateway forwards it to (with the real credential).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gateway.credentials.clis import Upstream
    from gateway.credentials.store import Used

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
    usage: dict[str, int] = field(default_factory=lambda: StandIn.zero_usage())
    """What the upstream's answers stated so far in this run (``wire``)."""
    cost_usd: float = 0.0
    model: str | None = None
    stopped: str | None = None
    """Why the model gateway stopped this run (its budget), said in the chat."""
    family: str = ""
    """The CLI family its upstreams are of (``gateway.credentials.clis.plan_for``): another replica rebuilds them."""
    shared: str | None = None
    """The hash of its row in the shared store (``gateway.credentials.store``), on a replica that did not issue it:
    what it uses here is added to that row."""
    counted: Used | None = None
    """On such a replica: what the row held when this request read it (the rest is this request's)."""

    limits: list[Any] = field(default_factory=list)
    """On such a replica: the run's daily budgets as this request found them (the issuer keeps its own)."""

    @staticmethod
    def zero_usage() -> dict[str, int]:
        return {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}

    def grant_json(self) -> dict[str, object]:
        """Whose use it is, for the other replicas (the upstreams by name: never the credential they hold)."""
        return {"run_id": self.run_id, "agent_id": self.agent_id, "session_key": self.session_key,
                "person_id": self.person_id, "owner": self.owner, "family": self.family,
                "upstreams": sorted(self.upstreams)}


class StandIns:
    def __init__(self) -> None:
        self._live: dict[str, StandIn] = {}

    @staticmethod
    def key(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()

    def issue(self, grant: StandIn) -> str:
        token = PREFIX + secrets.token_urlsafe(32)
        self._live[self.key(token)] = grant
        return token

    def revoke(self, token: str) -> StandIn | None:
        return self._live.pop(self.key(token), None)

    def find(self, given: str | None) -> StandIn | None:
        """The live stand-in ``given`` is, or None (unknown, or its run has ended)."""
        return self._live.get(self.key(given)) if given and given.startswith(PREFIX) else None

    def live(self) -> list[StandIn]:
        return list(self._live.values())
