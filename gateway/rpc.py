"""The method registry and the dispatcher.

Each gateway method is declared once, beside its handler, with the ``method``
decorator: its name, params model, required scope, and whether it de-duplicates
by ``idempotencyKey``. The dispatcher then validates, authorizes, de-duplicates,
calls and maps errors the same way for every method. ``hello-ok
features.methods`` and the published schemas come from this registry.

Handlers are ``async def handler(params: ParamsModel, ctx: CallContext) -> result``
where the result is JSON-able (dicts, lists, pydantic models) and failures are
raised as ``gateway.protocol.RpcError``.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol

import orjson
import structlog
from pydantic import BaseModel, ConfigDict, ValidationError

from gateway.protocol import (
    Forbidden,
    InvalidRequest,
    RequestFrame,
    RpcError,
    Unavailable,
    describe_validation_error,
    error_frame,
    ok_frame,
)

if TYPE_CHECKING:
    from gateway.core import Gateway
    from gateway.platforms.interface import ChatPlatforms

__all__ = [
    "ADMIN",
    "APPROVALS",
    "NODE",
    "PAIRING",
    "READ",
    "WRITE",
    "CallContext",
    "Caller",
    "Dispatcher",
    "Durable",
    "IdempotencyCache",
    "MethodSpec",
    "NoParams",
    "Params",
    "Registry",
    "SessionScope",
    "grants",
    "method",
    "registry",
    "validate_wire",
]

log = structlog.get_logger("gateway.rpc")

READ: Final = "operator.read"
WRITE: Final = "operator.write"
ADMIN: Final = "operator.admin"
APPROVALS: Final = "operator.approvals"
PAIRING: Final = "operator.pairing"
NODE: Final = "node"
"""Pseudo-scope: only clients connected with role ``node`` may call the method."""

OPERATOR_SCOPES: Final = (READ, WRITE, ADMIN, APPROVALS, PAIRING)


def grants(granted: frozenset[str], needed: str) -> bool:
    """Whether an operator holding ``granted`` scopes may use a method needing ``needed``.

    admin implies every operator scope; write implies read.
    """
    if needed in granted or ADMIN in granted:
        return True
    return needed == READ and WRITE in granted


class Params(BaseModel):
    """Base for method params: closed objects, so a misspelled field is an error that names it.

    Params from the wire are also strict in type (``validate_wire``): ``"yes"`` is not a boolean, ``1.5`` or
    ``"1"`` not an integer, as in OpenClaw's JSON Schema validators. Strictness is applied to the JSON
    form, so arrays still fill tuples and strings still fill enums and literals.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def validate_wire(model: type[BaseModel], raw: Any) -> BaseModel:
    """Validate wire params (already-decoded JSON) against ``model``, strictly in type.

    The one place request params are validated, for every method (ours, capabilities', plugins'): pydantic's
    strict mode on the JSON form refuses every lax coercion (string to bool or number, float to int).

    Raises:
        ValidationError: naming the field.
        orjson.JSONEncodeError: for values JSON cannot carry (integers past 64 bits).
    """
    return model.model_validate_json(orjson.dumps({} if raw is None else raw), strict=True)


class NoParams(Params):
    """For methods that take no params."""


Handler = Callable[[Any, "CallContext"], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class MethodSpec:
    name: str
    params: type[BaseModel]
    scope: str
    handler: Handler
    idempotent: bool = False
    aliases: tuple[str, ...] = ()
    description: str = ""
    baseline: bool = False
    """Callable by a non-owner agent run's token: a method behind one of the baseline MCP tools."""


@dataclass(frozen=True, slots=True)
class SessionScope:
    """What a non-owner agent run may look at: its own session, the sessions it spawned, and the sessions of
    the chat it came from (``channel`` + ``chat_id``, when it came from one)."""

    session_key: str
    channel: str | None = None
    chat_id: str | None = None

    def allows(self, key: str, *, channel: str | None = None, peer_id: str | None = None,
               parent_key: str | None = None) -> bool:
        """Whether a session (its key, and the chat and parent stored with it) is within this scope."""
        if key == self.session_key or parent_key == self.session_key:
            return True
        return self.channel is not None and channel == self.channel and peer_id == self.chat_id

    def allows_chat(self, channel: str, chat_id: str) -> bool:
        return self.channel is not None and channel == self.channel and chat_id == self.chat_id


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling: fixed at handshake time for the life of the connection."""

    conn_id: str
    role: str
    scopes: frozenset[str]
    client_id: str
    client_mode: str
    remote: str
    device_id: str | None = None
    display_name: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    methods: frozenset[str] | None = None
    """When set, the only methods this caller may use (a non-owner agent run's token); None: no limit."""
    confined_to: SessionScope | None = None
    """When set, the only sessions and chats this caller may read (a non-owner agent run); None: all."""


@dataclass(slots=True)
class CallContext:
    """What a handler gets besides its params: who calls, and the gateway whose typed services it uses
    (``ctx.gateway.sessions``, ``ctx.gateway.runs``, ``ctx.platforms``...)."""

    caller: Caller
    gateway: Gateway
    request_id: str
    method: str

    @property
    def platforms(self) -> ChatPlatforms:
        """The chat platforms, or ``Unavailable`` when none is installed or attached on this gateway."""
        platforms = self.gateway.platforms
        if platforms is None:
            raise Unavailable("channels are not available on this gateway")
        return platforms


class Registry:
    """Name -> MethodSpec. One process-wide instance, ``registry``, is filled at import time."""

    def __init__(self) -> None:
        self._specs: dict[str, MethodSpec] = {}
        self._aliases: dict[str, str] = {}

    def add(self, spec: MethodSpec) -> None:
        for name in (spec.name, *spec.aliases):
            if name in self._specs or name in self._aliases:
                raise ValueError(f"method registered twice: {name}")
        self._specs[spec.name] = spec
        for alias in spec.aliases:
            self._aliases[alias] = spec.name

    def remove(self, name: str) -> None:
        spec = self._specs.pop(name, None)
        if spec:
            for alias in spec.aliases:
                self._aliases.pop(alias, None)

    def get(self, name: str) -> MethodSpec | None:
        spec = self._specs.get(name)
        if spec is None and name in self._aliases:
            spec = self._specs[self._aliases[name]]
        return spec

    def names(self) -> list[str]:
        return sorted(self._specs)

    def specs(self) -> list[MethodSpec]:
        return [self._specs[n] for n in self.names()]

    def baseline_names(self) -> frozenset[str]:
        """The methods a non-owner agent run may call (declared ``baseline=True``), aliases included."""
        return frozenset(n for spec in self._specs.values() if spec.baseline for n in (spec.name, *spec.aliases))

    def method(
        self,
        name: str,
        *,
        params: type[BaseModel] = NoParams,
        scope: str = ADMIN,
        idempotent: bool = False,
        aliases: tuple[str, ...] = (),
        baseline: bool = False,
    ) -> Callable[[Handler], Handler]:
        """Declare a method. Unclassified means admin (default-deny, as OpenClaw does).

        ``baseline=True`` lets non-owner agent runs call it: say so only for a method behind a baseline MCP
        tool (a test keeps the two in agreement). Scopes alone are not enough there: node, browser and tts
        methods need only ``operator.write``, as OpenClaw classifies them, yet sit behind owner-only tools.
        """

        def deco(fn: Handler) -> Handler:
            doc = (fn.__doc__ or "").strip().splitlines()
            self.add(
                MethodSpec(
                    name=name,
                    params=params,
                    scope=scope,
                    handler=fn,
                    idempotent=idempotent,
                    aliases=aliases,
                    description=doc[0] if doc else "",
                    baseline=baseline,
                )
            )
            return fn

        return deco


registry = Registry()
method = registry.method


class IdempotencyCache:
    """Remembers the outcome of side-effecting requests by (method, idempotencyKey) for a while.

    A retry that arrives while the first call is still running waits for it instead of running twice.
    A refusal (``RpcError``) is remembered like a result; an unexpected failure or a cancellation is
    not, so a retry may still succeed. Bounded in size (oldest first out) and age (``ttl_s``).

    Args:
        ttl_s: how long an outcome is remembered, in seconds.
        max_entries: how many outcomes are kept at most.
        clock: monotonic time source (tests pass a fake).
    """

    def __init__(
        self, *, ttl_s: float = 300.0, max_entries: int = 10_000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[tuple[str, str], tuple[float, asyncio.Future[Any]]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def _evict(self, now: float) -> None:
        # Entries are kept in insertion order, so the expired ones are at the front.
        entries = self._entries
        while entries:
            key, (at, _fut) = next(iter(entries.items()))
            if now - at > self.ttl_s or len(entries) >= self.max_entries:
                del entries[key]
            else:
                break

    async def run(self, key: tuple[str, str], call: Callable[[], Awaitable[Any]]) -> Any:
        """Run ``call`` once per key while remembered; later callers get the same result or error."""
        now = self._clock()
        hit = self._entries.get(key)
        if hit is not None and now - hit[0] <= self.ttl_s:
            # shield: a waiter that is cancelled must not cancel the shared outcome.
            return await asyncio.shield(hit[1])
        if hit is not None:
            del self._entries[key]
        self._evict(now)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._entries[key] = (now, fut)
        try:
            result = await call()
        except RpcError as exc:
            fut.set_exception(exc)
            fut.exception()  # mark retrieved: nobody may be waiting
            raise
        except BaseException as exc:
            if self._entries.get(key, (0, None))[1] is fut:
                del self._entries[key]
            fut.set_exception(exc if isinstance(exc, Exception) else Unavailable("request cancelled", retryable=True))
            fut.exception()
            raise
        fut.set_result(result)
        return result


class Durable(Protocol):
    """Where answers of idempotent requests outlive the process (``gateway.store.idempotency``)."""

    async def get(self, method: str, key: str) -> Any:
        """The stored answer, or the sentinel the dispatcher was given as ``missing`` when there is none."""

    async def put(self, method: str, key: str, result: Any) -> None: ...


class Dispatcher:
    """Turns a request frame into a response frame: validate, authorize, de-duplicate, call.

    Args:
        reg: the method registry.
        idempotency: answers of idempotent requests in this process (also joins concurrent retries).
        durable: the same answers in the database, so a retry after a restart is answered too.
    """

    def __init__(self, reg: Registry, idempotency: IdempotencyCache, durable: Durable | None = None,
                 missing: object = None) -> None:
        self.registry = reg
        self.idempotency = idempotency
        self.durable = durable
        self._missing = missing

    async def dispatch(self, frame: RequestFrame, caller: Caller, gateway: Gateway) -> dict[str, Any]:
        try:
            payload = await self.call(frame.method, frame.params, caller, gateway, request_id=frame.id)
        except RpcError as exc:
            return error_frame(frame.id, exc)
        return ok_frame(frame.id, payload)

    async def call(
        self, name: str, raw_params: Any, caller: Caller, gateway: Gateway, *, request_id: str = ""
    ) -> Any:
        """Run one method for ``caller``; raises ``RpcError`` on any refusal or failure."""
        spec = self.registry.get(name)
        if spec is None:
            raise InvalidRequest(f"unknown method: {name}")
        self._authorize(spec, caller)
        try:
            params = validate_wire(spec.params, raw_params)
        except ValidationError as exc:
            raise InvalidRequest(
                f"invalid {name} params: {describe_validation_error(exc)}",
                details={"method": name},
            ) from None
        except orjson.JSONEncodeError:
            raise InvalidRequest(f"invalid {name} params: a number is out of range",
                                 details={"method": name}) from None
        ctx = CallContext(caller=caller, gateway=gateway, request_id=request_id, method=spec.name)

        async def invoke() -> Any:
            try:
                return await spec.handler(params, ctx)
            except RpcError:
                raise
            except Exception:
                log.exception("method failed", method=spec.name, request_id=request_id)
                raise Unavailable(f"{spec.name} failed: internal error", retryable=True) from None

        key = getattr(params, "idempotencyKey", None) if spec.idempotent else None
        if isinstance(key, str) and key:
            durable = self.durable
            if durable is None:
                return await self.idempotency.run((spec.name, key), invoke)

            async def remembered() -> Any:
                try:
                    stored = await durable.get(spec.name, key)
                except Exception:
                    log.exception("idempotency store unreadable", method=spec.name)
                    stored = self._missing
                if stored is not self._missing:
                    return stored  # answered before a restart: the same answer, no second effect
                result = await invoke()
                try:
                    await durable.put(spec.name, key, result)
                except Exception:
                    log.exception("idempotency store unwritable", method=spec.name)
                return result

            return await self.idempotency.run((spec.name, key), remembered)
        return await invoke()

    @staticmethod
    def _authorize(spec: MethodSpec, caller: Caller) -> None:
        if spec.scope == NODE:
            if caller.role != "node":
                raise Forbidden(f"{spec.name} is for node connections only", details={"code": "ROLE_REQUIRED"})
            return
        if caller.role != "operator":
            raise Forbidden(
                f"{spec.name} is not available to role {caller.role}", details={"code": "ROLE_FORBIDDEN"}
            )
        if not grants(caller.scopes, spec.scope):
            raise Forbidden(
                f"missing scope: {spec.scope}",
                details={"code": "MISSING_SCOPE", "missingScope": spec.scope},
            )
        if caller.methods is not None and spec.name not in caller.methods:
            raise Forbidden(
                f"{spec.name} is not available to this agent run (owner tools only)",
                details={"code": "RUN_TIER_FORBIDDEN"},
            )
