"""Run tokens: what an agent run's MCP shim connects with instead of the gateway token."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from gateway.dispatch.callers import SessionScope

__all__ = ["RunGrant", "RunTokens"]


@dataclass(frozen=True, slots=True)
class RunGrant:
    """What one run token allows: at most these scopes, and only these methods when ``methods`` is set."""

    scopes: frozenset[str]
    methods: frozenset[str] | None = None
    confine: SessionScope | None = None
    reach: tuple[str, ...] = ()
    """The folders the run can see (its workspace): a file it names must be in one (``gateway.sandbox.reach``)."""
    person_id: str | None = None
    """A person's web sign-in (``gateway.people.signin``) rather than a run: who is calling."""
    signin_id: str | None = None
    """That sign-in's id (revoking it closes the connections it opened)."""
    session_key: str | None = None
    """The session whose turn holds the token (who did what, in the audit log)."""
    run_id: str | None = None
    """The run whose token it is: the connections opened with it are closed when the run ends (``on_revoke``)."""
    node_id: str | None = None
    """The node the run's turn is on (``gateway.agent_hosts``): a file it names is that node's, read there
    (``gateway.sandbox.reach.read_run_file``), never a path on the gateway's disk."""


class RunTokens:
    """Tokens the gateway hands to agent runs instead of its own token, each capped to a grant.

    Why: the agent (and whatever a chat user talks it into running) can read the token its MCP shim
    gets. With the gateway token it could connect with every scope; with a run token it gets at most
    what its tier allows, and only while the run lasts. Stored by SHA-256, looked up by hash.
    """

    def __init__(self) -> None:
        self._grants: dict[str, RunGrant] = {}
        self._on_revoke: list[Callable[[RunGrant], object]] = []

    @staticmethod
    def _key(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()

    PREFIX = "run-"

    @classmethod
    def looks_like(cls, token: str | None) -> bool:
        """Shaped like a run token. Run tokens are 256-bit random, so failing with one is no guessing attempt."""
        return token is not None and token.startswith(cls.PREFIX)

    def issue(self, scopes: frozenset[str], methods: frozenset[str] | None = None,
              confine: SessionScope | None = None, reach: tuple[str, ...] = (), session_key: str | None = None,
              run_id: str | None = None, node_id: str | None = None) -> str:
        token = self.PREFIX + secrets.token_urlsafe(32)
        self._grants[self._key(token)] = RunGrant(scopes, methods, confine, reach, session_key=session_key,
                                                  run_id=run_id, node_id=node_id)
        return token

    def on_revoke(self, hook: Callable[[RunGrant], object]) -> None:
        """Call ``hook`` with each grant as it is revoked (the gateway closes the sockets opened with it: a socket
        kept from the run must not outlive it)."""
        self._on_revoke.append(hook)

    def revoke(self, token: str) -> None:
        grant = self._grants.pop(self._key(token), None)
        if grant is not None:
            for hook in self._on_revoke:
                hook(grant)

    def grant(self, given: str | None) -> RunGrant | None:
        """What ``given`` allows, or None when it is not a live run token."""
        return self._grants.get(self._key(given)) if given and self.looks_like(given) else None

    def __len__(self) -> int:
        return len(self._grants)
