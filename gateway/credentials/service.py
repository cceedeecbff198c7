"""The model gateway's service: each run's plan and stand-in, the budgets it enforces.

The executor (which finds it by ``gateway.composition.ports.MODEL_GATEWAY``) asks it three things per turn:
the agent's ``plan`` (before the sandbox is planned: the credential files it hides), a stand-in with the run's
environment (``issue``, where the run token is issued) and, at the end, what the run used (``revoke``, where the
run token is revoked).
"""

from __future__ import annotations

import asyncio
import fnmatch
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit
from urllib.request import getproxies_environment, proxy_bypass

import httpx
import structlog
from sqlalchemy import func, select

from gateway.access.misses import MissThrottle
from gateway.credentials.clis import STANDIN, Plan, plan_for
from gateway.credentials.config import GEMINI_CLI_CLIENT_SECRET
from gateway.credentials.egress import EgressProxy
from gateway.credentials.oauth import LoginRefresher, LoginShape
from gateway.credentials.standins import PREFIX, StandIn, StandIns
from gateway.credentials.store import SharedStandIns, Used
from gateway.protocol import InvalidRequest
from gateway.sandbox.relay import GatewayRelay
from gateway.sandbox.service import PORTAL_PORT
from gateway.store.errors import StoreError
from gateway.usage.store import TurnUsage, UsageRepo, day_start_ms

if TYPE_CHECKING:
    import aiohttp

    from gateway.agents.runtimes.base import Runtime
    from gateway.config import AgentConfig, ConfigStore
    from gateway.people.service import PeopleService
    from gateway.store import Database

__all__ = ["Issued", "ModelGateway", "family_of"]

log = structlog.get_logger("gateway.credentials")



def family_of(runtime: Runtime) -> str:
    """The CLI whose credentials a runtime uses: its own name, or an ACP preset's ``credentials_of``."""
    preset = getattr(runtime, "preset", None)
    return getattr(preset, "credentials_of", None) or runtime.name


@dataclass(slots=True)
class Issued:
    """A run's stand-in and what its CLI is given: ``env`` (base URLs and the stand-in where keys were) and, for a
    CLI with providers in a config file, provider -> base URL."""

    token: str
    env: dict[str, str]
    base_urls: dict[str, str] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    """``Plan.config``: the CLI's own config its per-run config carries (keys out)."""


@dataclass(slots=True)
class _Limit:
    limit: float
    spent: float
    """Spent today before this run started (the usage store)."""
    what: str


class ModelGateway:
    def __init__(self, config: ConfigStore, db: Database, people: PeopleService | None,
                 listen: Callable[[], tuple[str, int]], shared: SharedStandIns | None = None) -> None:
        self._config = config
        self._db = db
        self._people = people
        self._listen = listen
        self.standins = StandIns()
        self.shared = shared
        """Where the stand-ins of node turns are shared with the other replicas (None: this replica only)."""
        self._shared_keys: set[str] = set()
        """The stand-ins this replica issued and shared, while their runs last."""
        self._ending: set[str] = set()
        """Shared stand-ins revoked here whose rows are being deleted (``gather``)."""
        self.misses = MissThrottle()
        """Look-ups of stand-ins nobody issued, per client address: a guesser gets no database read per guess."""
        self.client = httpx.AsyncClient(timeout=httpx.Timeout(60, connect=30), follow_redirects=False)
        """For the logins' token endpoints: a refresh an hour is no place for speed."""
        self._upstream: aiohttp.ClientSession | None = None
        self._proxies: dict[str, str | None] = {}
        self.refresher = LoginRefresher(self.client)
        self._limits: dict[str, list[_Limit]] = {}
        self._egress: dict[tuple[str, ...], tuple[EgressProxy, GatewayRelay]] = {}
        """One proxy and relay socket per allowlist in use, made at its first run (a config change adds one)."""
        self._egress_lock = asyncio.Lock()

    async def egress_socket(self, runs_dir: Path, allow: list[str]) -> Path | None:
        """The relay socket of the HTTPS proxy serving ``allow``, for a run without a network (None: no hosts)."""
        key = tuple(sorted(set(allow)))
        if not key:
            return None
        async with self._egress_lock:  # two runs starting at once make one proxy, not two
            if key not in self._egress:
                proxy = EgressProxy(key, lambda: self._config.config.modelGateway.egress)
                await proxy.start()
                name = hashlib.sha256("\n".join(key).encode()).hexdigest()[:12]
                self._egress[key] = (proxy, GatewayRelay(runs_dir / f"egress-{name}.sock", lambda: proxy.address))
            relay = self._egress[key][1]
        return await relay.socket()

    def upstream_client(self) -> aiohttp.ClientSession:
        """The pool the model requests go out on, made at the first one (aiohttp's import is no start's cost).

        aiohttp, not httpx, for the relay: its C parser relays a 100 KB answer for about a third of the CPU."""
        if self._upstream is None:
            import aiohttp

            self._upstream = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=None, connect=30, sock_read=600), auto_decompress=False,
                connector=aiohttp.TCPConnector(limit=500, limit_per_host=0, keepalive_timeout=60),
                cookie_jar=aiohttp.DummyCookieJar())
        return self._upstream

    def proxy_for(self, url: str) -> str | None:
        """The gateway's own outbound proxy for this upstream (``HTTPS_PROXY``/``NO_PROXY`` in its environment),
        read once per origin: aiohttp's ``trust_env`` reads the environment and ``~/.netrc`` in a thread at every
        request, which cost more than the relay itself."""
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        if origin not in self._proxies:
            proxies = getproxies_environment()
            bypass = parts.hostname is None or bool(proxy_bypass(parts.hostname))
            self._proxies[origin] = None if bypass else proxies.get(parts.scheme)
        return self._proxies[origin]

    @property
    def enabled(self) -> bool:
        return self._config.config.modelGateway.enabled

    def shape(self, kind: str) -> LoginShape:
        """How a login of this kind keeps and refreshes its tokens (the endpoints from the config, read now)."""
        cfg = self._config.config.modelGateway
        if kind == "google":
            return LoginShape(None, "access_token", "refresh_token", "expiry_date", cfg.googleTokenUrl, True,
                              {"client_id": cfg.googleClientId,
                               "client_secret": cfg.googleClientSecret or GEMINI_CLI_CLIENT_SECRET})
        if kind == "codex":  # the ChatGPT backend wants the account beside the bearer; Codex stamps each refresh
            return LoginShape("tokens", "access_token", "refresh_token", None, cfg.openaiTokenUrl, False,
                              {"client_id": cfg.openaiClientId}, headers={"chatgpt-account-id": "account_id"},
                              stamp="last_refresh")
        return LoginShape("claudeAiOauth", "accessToken", "refreshToken", "expiresAt", cfg.anthropicTokenUrl, False,
                          {"client_id": cfg.anthropicClientId})

    @property
    def others_models(self) -> list[str]:
        return self._config.config.modelGateway.othersModels

    # -- per agent --------------------------------------------------------------------------------

    def plan(self, agent: AgentConfig, runtime: Runtime) -> Plan:
        """How this agent's CLI is fronted (from its env over the gateway's, and the login below its HOME)."""
        return self._plan_of(agent, family_of(runtime))

    @staticmethod
    def _plan_of(agent: AgentConfig, family: str) -> Plan:
        env = {**os.environ, **agent.env}
        home = Path(agent.env.get("HOME") or Path.home()).expanduser()
        return plan_for(family, env, home)

    def refusal(self, plan: Plan | None, agent: AgentConfig, *, owner: bool) -> str | None:
        """Why this run may not start: its CLI cannot be fronted, it is not the owner's, and the owner did not
        share the agent's credentials with everyone (``credentialsMode: shared``)."""
        if owner or agent.credentialsMode == "shared":
            return None
        why = plan.unfronted if plan is not None else "the model gateway is off (modelGateway.enabled false)"
        if why is None:
            return None
        return (f"this agent cannot run for you: {why}, so a run would hold the owner's credentials; the owner "
                "can set credentialsMode: shared on the agent (remoteclaw doctor shows what that gives up)")

    # -- per run ----------------------------------------------------------------------------------

    async def issue(self, plan: Plan, *, run_id: str, agent: AgentConfig, session_key: str, person_id: str | None,
                    owner: bool, isolated: bool, shared_for_s: float | None = None) -> Issued:
        """A stand-in for this run and its CLI's environment; ``isolated``: the run has no network (the portal);
        ``shared_for_s``: every replica accepts it for at most that long (a node turn's CLI calls its model where
        the node's address leads)."""
        grant = StandIn(run_id=run_id, agent_id=agent.id, session_key=session_key, person_id=person_id, owner=owner,
                        upstreams={u.name: u for u in plan.upstreams}, family=plan.family)
        token = self.standins.issue(grant)
        if shared_for_s is not None and self.shared is not None:
            key = self.standins.key(token)
            self._shared_keys.add(key)  # before the write: a revoke meanwhile still hides the row here
            try:
                await self.shared.put(key, run_id=run_id, grant=grant.grant_json(), ttl_s=shared_for_s)
            except StoreError as exc:
                log.warning("a node turn's stand-in is not shared: its model calls work only if they reach this "
                            "replica", run_id=run_id, error=str(exc))
        host, port = self._listen()
        host = "127.0.0.1" if host in ("0.0.0.0", "", "::") else host
        root = f"http://127.0.0.1:{PORTAL_PORT}" if isolated else f"http://{host}:{port}"
        urls = {u.name: f"{root}/model/{u.name}" for u in plan.upstreams}
        env = {}
        for name, value in plan.run_env.items():
            if value == STANDIN:
                env[name] = token
            elif value.startswith("{base:"):
                env[name] = urls[value[6:-1]]
            else:  # a switch the CLI needs to use what it is given (GOOGLE_GENAI_USE_GCA)
                env[name] = value
        self._limits[run_id] = await self._day_limits(agent, person_id, owner=owner)
        return Issued(token, env, {provider: urls[up] for provider, up in plan.providers.items()}, plan.config)

    def revoke(self, token: str) -> StandIn | None:
        """The stand-in is dead from here on; what its run used (None: not one of ours)."""
        grant = self.standins.revoke(token)
        if grant is not None:
            self._limits.pop(grant.run_id, None)
            key = self.standins.key(token)
            if key in self._shared_keys:  # its row goes in ``gather``; till then no look-up here finds it either
                self._shared_keys.discard(key)
                self._ending.add(key)
        return grant

    async def gather(self, token: str, grant: StandIn | None) -> StandIn | None:
        """After ``revoke`` of a shared stand-in: its row deleted (no replica accepts it any more), and what the other
        replicas saw the run use added to ``grant``."""
        if self.shared is None or grant is None:
            return grant
        key = self.standins.key(token)
        try:
            used = await self.shared.take(key)
        except StoreError as exc:  # the row expires on its own; what the others counted is lost, said here
            log.warning("a node turn's usage at the other replicas could not be read", run_id=grant.run_id,
                        error=str(exc))
            return grant
        finally:
            self._ending.discard(key)
        if used is not None:
            for key, value in used.usage.items():
                grant.usage[key] = grant.usage.get(key, 0) + value
            grant.cost_usd += used.cost_usd
            grant.model = grant.model or used.model
            grant.stopped = grant.stopped or used.stopped
        return grant

    async def find(self, given: str | None, address: str = "") -> StandIn | None:
        """The live stand-in ``given`` is: this replica's own (no wait), else one another replica issued for a node
        turn and shared, rebuilt with this replica's own credential for its upstreams (None: neither). ``address``:
        the client's, whose misses are throttled (``MissThrottle``)."""
        grant = self.standins.find(given)
        if grant is not None or self.shared is None or not given or not given.startswith(PREFIX):
            return grant
        key = self.standins.key(given)
        if key in self._ending or self.misses.blocked(address):
            return None
        try:
            found = await self.shared.get(key)
        except StoreError as exc:  # the database is away: refused now, the CLI's next request tries again
            log.warning("a stand-in could not be looked up in the shared store", error=str(exc))
            return None
        if found is None:
            self.misses.miss(address)
            return None
        data, used = found
        agent = next((a for a in self._config.config.agents.list if a.id == data["agent_id"]), None)
        if agent is None:  # the config changed under the run: nothing to add a credential from
            return None
        plan = await asyncio.to_thread(self._plan_of, agent, str(data["family"]))
        names = set(data["upstreams"])
        grant = StandIn(run_id=data["run_id"], agent_id=agent.id, session_key=data["session_key"],
                        person_id=data["person_id"], owner=bool(data["owner"]),
                        upstreams={u.name: u for u in plan.upstreams if u.name in names},
                        usage={**StandIn.zero_usage(), **used.usage}, cost_usd=used.cost_usd, model=used.model,
                        stopped=used.stopped, family=plan.family, shared=key,
                        counted=Used(dict(used.usage), used.cost_usd, used.model, used.stopped))
        try:
            grant.limits = await self._day_limits(agent, grant.person_id, owner=grant.owner)
        except StoreError as exc:  # a budget that cannot be read is not waved through
            log.warning("a shared stand-in's budgets could not be read", run_id=grant.run_id, error=str(exc))
            return None
        return grant

    async def settle(self, grant: StandIn) -> None:
        """What one request of another replica's stand-in used, added to its row (the issuer counts it at the end)."""
        if grant.shared is None or grant.counted is None or self.shared is None:
            return
        before = grant.counted
        more = Used({k: v - before.usage.get(k, 0) for k, v in grant.usage.items() if v != before.usage.get(k, 0)},
                    grant.cost_usd - before.cost_usd, grant.model, grant.stopped)
        if not more.usage and not more.cost_usd and more.stopped == before.stopped:
            return
        try:
            await self.shared.add(grant.shared, more)
        except StoreError as exc:
            log.warning("a node turn's usage here could not be passed to its replica", run_id=grant.run_id,
                        error=str(exc))

    # -- money ------------------------------------------------------------------------------------

    def price(self, model: str | None, usage: dict[str, int]) -> float:
        """What ``usage`` of ``model`` cost by ``modelGateway.prices`` (0 for a model not listed)."""
        prices = self._config.config.modelGateway.prices
        if not model or not prices:
            return 0.0
        entry = prices.get(model) or next((p for pat, p in prices.items() if fnmatch.fnmatchcase(model, pat)), None)
        if entry is None:
            return 0.0
        return (usage.get("input", 0) * entry.input + usage.get("output", 0) * entry.output
                + usage.get("cacheRead", 0) * entry.cacheRead + usage.get("cacheWrite", 0) * entry.cacheWrite) / 1e6

    async def _day_limits(self, agent: AgentConfig, person_id: str | None, *, owner: bool) -> list[_Limit]:
        since = day_start_ms(datetime.now(UTC).date())
        out = []
        if agent.maxCostPerDay is not None:
            async with self._db.session() as s:
                spent = await UsageRepo.cost_since(s, agent.id, since)
            out.append(_Limit(agent.maxCostPerDay, spent, f"agent {agent.id}'s daily budget (maxCostPerDay)"))
        if person_id is not None and self._people is not None:
            try:
                person = await self._people.get(person_id)
            except InvalidRequest:
                return out
            if person.max_cost_per_day is not None:
                out.append(_Limit(person.max_cost_per_day, await self._spent(since, TurnUsage.person_id == person_id),
                                  f"{person.name}'s daily budget"))
            team = self._config.config.people.maxCostPerDay
            if team is not None and not person.is_owner:
                out.append(_Limit(team, await self._spent(since, TurnUsage.person_id.is_not(None)),
                                  "the team's daily budget (people.maxCostPerDay)"))
        return out

    async def _spent(self, since_ms: int, whose: Any) -> float:
        async with self._db.session() as s:
            total = await s.scalar(select(func.coalesce(func.sum(TurnUsage.cost_usd), 0.0))
                                   .where(whose, TurnUsage.at_ms >= since_ms))
        return float(total or 0.0)

    def over_budget(self, grant: StandIn, pending: float = 0.0) -> str | None:
        """Why this run must stop now (a budget spent, counting what the live runs used so far), or None."""
        for lim in grant.limits if grant.shared is not None else self._limits.get(grant.run_id, ()):
            live = sum(g.cost_usd for g in self.standins.live() if g is not grant and (
                g.agent_id == grant.agent_id if lim.what.startswith("agent") else
                g.person_id is not None if lim.what.startswith("the team") else g.person_id == grant.person_id))
            used = lim.spent + live + grant.cost_usd + pending
            if used >= lim.limit:
                grant.stopped = (f"stopped: {lim.what} is spent (${used:.2f} of ${lim.limit:.2f} today); new turns "
                                 "start again at 00:00 UTC")
                return grant.stopped
        return None

    async def close(self) -> None:
        await self.client.aclose()
        if self._upstream is not None:
            await self._upstream.close()
        for proxy, relay in self._egress.values():
            await proxy.close()
            await relay.close()
