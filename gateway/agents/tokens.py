"""Run tokens: what an agent run's MCP shim connects with instead of the gateway token."""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import orjson
import structlog

from gateway.access.misses import MissThrottle
from gateway.dispatch.callers import SessionScope

if TYPE_CHECKING:
    from gateway.store import Database

__all__ = ["RunGrant", "RunTokens", "SharedGrants"]

log = structlog.get_logger("gateway.agents.tokens")


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


def _grant_json(grant: RunGrant) -> str:
    fields = asdict(grant)
    fields["scopes"] = sorted(grant.scopes)
    fields["methods"] = sorted(grant.methods) if grant.methods is not None else None
    return orjson.dumps(fields).decode()


def _grant_from(text: str) -> RunGrant:
    fields: dict[str, Any] = orjson.loads(text)
    methods, confine = fields.pop("methods"), fields.pop("confine")
    return RunGrant(scopes=frozenset(fields.pop("scopes")),
                    methods=frozenset(methods) if methods is not None else None,
                    confine=SessionScope(**confine) if confine is not None else None,
                    reach=tuple(fields.pop("reach")), **fields)


class SharedGrants:
    """The grants of run tokens the other replicas accept too (``gateway.store.run_tokens``): a node turn's shim
    connects wherever the node's address leads, maybe to a replica that did not issue its token.

    Written when the run starts, deleted when it ends; each row also expires (the run's longest life), and a
    replica starting again drops its own (its previous process's runs are over). Read only when a token is not
    in the replica's memory, so a local turn's handshake never waits on the database.
    """

    def __init__(self, db: Database, holder: str) -> None:
        self._db = db
        self._holder = holder

    async def put(self, token_hash: str, grant: RunGrant, ttl_s: float) -> None:
        from gateway.store.run_tokens import RunTokenRepo

        now = _now_ms()
        async with self._db.session() as s:
            await RunTokenRepo.put(s, token_hash, run_id=grant.run_id or "", holder=self._holder,
                                   grant=_grant_json(grant), now_ms=now, expires_at=now + int(ttl_s * 1000))

    async def get(self, token_hash: str) -> RunGrant | None:
        from gateway.store.run_tokens import RunTokenRepo

        async with self._db.reading() as s:
            found = await RunTokenRepo.get(s, token_hash, now_ms=_now_ms())
        return _grant_from(found) if found is not None else None

    async def live_runs(self, run_ids: Iterable[str]) -> set[str]:
        from gateway.store.run_tokens import RunTokenRepo

        async with self._db.reading() as s:
            return await RunTokenRepo.live_runs(s, run_ids, now_ms=_now_ms())

    async def drop_run(self, run_id: str) -> int:
        from gateway.store.run_tokens import RunTokenRepo

        async with self._db.session() as s:
            return await RunTokenRepo.drop_run(s, run_id)

    async def drop_own(self) -> int:
        """This replica's rows: a previous process of it issued them, and its runs ended with it."""
        from gateway.store.run_tokens import RunTokenRepo

        async with self._db.session() as s:
            return await RunTokenRepo.drop_holder(s, self._holder)

    async def prune(self) -> int:
        from gateway.store.run_tokens import RunTokenRepo

        async with self._db.session() as s:
            return await RunTokenRepo.prune(s, now_ms=_now_ms())


def _now_ms() -> int:
    return int(time.time() * 1000)


class RunTokens:
    """Tokens the gateway hands to agent runs instead of its own token, each capped to a grant.

    Why: the agent (and whatever a chat user talks it into running) can read the token its MCP shim
    gets. With the gateway token it could connect with every scope; with a run token it gets at most
    what its tier allows, and only while the run lasts. Stored by SHA-256, looked up by hash.
    """

    def __init__(self, shared: SharedGrants | None = None) -> None:
        self._grants: dict[str, RunGrant] = {}
        self._on_revoke: list[Callable[[RunGrant], object]] = []
        self.shared = shared
        """Where the grants of tokens shared with the other replicas are (None: this replica's memory only)."""
        self._shared_keys: set[str] = set()
        self.misses = MissThrottle()
        """Look-ups of run-shaped tokens nobody issued, per client address (no database read per guess)."""
        self._on_unshare: list[Callable[[RunGrant], object]] = []

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

    async def share(self, token: str, ttl_s: float) -> None:
        """Let every replica accept ``token`` (a node turn's: its shim connects wherever the node's address
        leads) for at most ``ttl_s``, or until it is revoked."""
        key = self._key(token)
        grant = self._grants.get(key)
        if grant is None or self.shared is None:
            return
        self._shared_keys.add(key)  # before the write: a revoke meanwhile still deletes the row
        await self.shared.put(key, grant, ttl_s)

    async def find(self, given: str | None, address: str = "") -> RunGrant | None:
        """What ``given`` allows: from this replica's memory (its own runs, no wait), else from the grants shared
        by the other replicas (a node turn that another replica runs). ``address``: the client's, whose misses
        are throttled (``gateway.access.misses``)."""
        grant = self.grant(given)
        if grant is not None or self.shared is None or given is None or not self.looks_like(given):
            return grant
        if self.misses.blocked(address):
            return None
        from gateway.store import StoreError

        try:
            found = await self.shared.get(self._key(given))
        except StoreError as exc:  # the database is away: refused now, the shim connects again
            log.warning("a run token could not be looked up in the shared store", error=str(exc))
            return None
        if found is None:
            self.misses.miss(address)
        return found

    def on_unshare(self, hook: Callable[[RunGrant], object]) -> None:
        """Call ``hook`` with each shared grant as it is revoked: the other replicas must stop accepting it and
        close what connected there with it."""
        self._on_unshare.append(hook)

    def on_revoke(self, hook: Callable[[RunGrant], object]) -> None:
        """Call ``hook`` with each grant as it is revoked (the gateway closes the sockets opened with it: a socket
        kept from the run must not outlive it)."""
        self._on_revoke.append(hook)

    def revoke(self, token: str) -> None:
        key = self._key(token)
        grant = self._grants.pop(key, None)
        if grant is not None:
            for hook in self._on_revoke:
                hook(grant)
            if key in self._shared_keys:
                self._shared_keys.discard(key)
                for hook in self._on_unshare:
                    hook(grant)

    def grant(self, given: str | None) -> RunGrant | None:
        """What ``given`` allows, or None when it is not a live run token."""
        return self._grants.get(self._key(given)) if given and self.looks_like(given) else None

    def runs(self) -> set[str]:
        """The runs whose tokens this replica issued and that are still live."""
        return {g.run_id for g in self._grants.values() if g.run_id is not None}

    def __len__(self) -> int:
        return len(self._grants)
