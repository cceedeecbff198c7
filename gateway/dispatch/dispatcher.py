"""The dispatcher, and what a method handler gets: ``CallContext``.

Each gateway method is declared once, beside its handler, with the ``method`` decorator (``gateway.dispatch.registry``):
its name, params model, required scope, and whether it de-duplicates by ``idempotencyKey``. The dispatcher then
validates, authorizes, de-duplicates, calls and maps errors the same way for every method. Method modules import
everything they need from here (the registry's and ``gateway.dispatch.callers``' names are re-exported).

Handlers are ``async def handler(params: ParamsModel, ctx: CallContext) -> result``
where the result is JSON-able (dicts, lists, pydantic models) and failures are
raised as ``gateway.protocol.RpcError``.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import orjson
import structlog
from pydantic import ValidationError

from gateway.dispatch.callers import (
    ADMIN,
    APPROVALS,
    NODE,
    OPERATOR_SCOPES,
    PAIRING,
    QUESTIONS,
    READ,
    WRITE,
    Caller,
    SessionScope,
    grants,
)
from gateway.dispatch.context import CallContext, HandlerParts
from gateway.dispatch.registry import (
    MethodSpec,
    NoParams,
    Params,
    Registry,
    drop_ignored,
    method,
    registry,
    takes_any_field,
    validate_wire,
    wire_field_names,
)
from gateway.logs.sink import scrub_secrets
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
from gateway.store.errors import DiskFull, storage_failure

if TYPE_CHECKING:
    from gateway.store.idempotency import Durable

__all__ = [
    "ADMIN",
    "APPROVALS",
    "NODE",
    "OPERATOR_SCOPES",
    "PAIRING",
    "QUESTIONS",
    "READ",
    "WRITE",
    "CallContext",
    "Caller",
    "Dispatcher",
    "IdempotencyCache",
    "MethodSpec",
    "NoParams",
    "Params",
    "Registry",
    "SessionScope",
    "grants",
    "method",
    "registry",
    "takes_any_field",
    "validate_wire",
    "wire_field_names",
]

log = structlog.get_logger("gateway.dispatch.dispatcher")

_S = TypeVar("_S")

def _failure(spec: MethodSpec, exc: Exception, request_id: str) -> Unavailable:
    """An unexpected failure as the caller sees it: a storage problem said as such, anything else as internal."""
    if (storage := storage_failure(exc)) is not None:  # said as such, not as a bug
        log.warning("method failed: storage", method=spec.name, request_id=request_id, error=storage.message)
        code = "DISK_FULL" if isinstance(storage, DiskFull) else "DATABASE_UNAVAILABLE"
        return Unavailable(f"{spec.name} failed: {storage.message}", retryable=True, details={"code": code})
    log.exception("method failed", method=spec.name, request_id=request_id)
    return Unavailable(f"{spec.name} failed: internal error", retryable=True)


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

    async def dispatch(self, frame: RequestFrame, caller: Caller, parts: HandlerParts) -> dict[str, Any]:
        try:
            payload = await self.call(frame.method, frame.params, caller, parts, request_id=frame.id)
        except RpcError as exc:
            return error_frame(frame.id, exc)
        return ok_frame(frame.id, payload)

    async def call(
        self, name: str, raw_params: Any, caller: Caller, parts: HandlerParts, *, request_id: str = ""
    ) -> Any:
        """Run one method for ``caller``; raises ``RpcError`` on any refusal or failure.

        The error's message and details are scrubbed of every known secret's text: they may quote input that
        holds one (a key pasted in the wrong place, a parser's snippet, a provider quoting the key back), and
        they reach sockets, ``/mcp`` clients and agents, none of which is the log's scrubber.
        """
        try:
            return await self._call(name, raw_params, caller, parts, request_id=request_id)
        except RpcError as exc:
            exc.message = scrub_secrets(exc.message)
            exc.details = scrub_secrets(exc.details)
            raise

    def answer_now(self, frame: RequestFrame, caller: Caller, parts: HandlerParts) -> dict[str, Any] | None:
        """The response frame to a request for an ``inline`` method, computed right away, with no task: the
        same authorization, validation and error mapping as ``dispatch``. None for any other method, and for an
        inline handler that awaited after all (it is closed, and ``dispatch`` then runs it the ordinary way).

        Why: a ``health`` burst from 10,000 clients spent most of its time on the way to the handler (a queue,
        a task per request, the coroutines of ``dispatch``), not in it.
        """
        spec = self.registry.get(frame.method)
        if spec is None or not spec.inline:
            return None
        try:
            spec, params = self._prepare(frame.method, frame.params, caller)
            for access in spec.access:
                parts.access.authorize_now(access, caller)
            running = spec.handler(params, CallContext(caller=caller, parts=parts, request_id=frame.id,
                                                      method=spec.name))
            try:
                running.send(None)  # type: ignore[attr-defined]
            except StopIteration as done:
                return ok_frame(frame.id, done.value)
            running.close()  # type: ignore[attr-defined]
            log.warning("an inline method awaited; answered the ordinary way", method=spec.name)
            return None
        except RpcError as exc:
            exc.message = scrub_secrets(exc.message)
            exc.details = scrub_secrets(exc.details)
            return error_frame(frame.id, exc)
        except Exception:
            log.exception("method failed", method=spec.name, request_id=frame.id)
            return error_frame(frame.id, Unavailable(f"{spec.name} failed: internal error", retryable=True))

    def _prepare(self, name: str, raw_params: Any, caller: Caller) -> tuple[MethodSpec, Any]:
        """The method's spec and its validated params, once the caller may call it; raises ``RpcError``."""
        spec = self.registry.get(name)
        if spec is None:
            raise InvalidRequest(f"unknown method: {name}")
        self._authorize(spec, caller)
        try:
            params = validate_wire(spec.params, drop_ignored(spec.name, spec.params, raw_params))
        except ValidationError as exc:
            raise InvalidRequest(
                f"invalid {name} params: {describe_validation_error(exc)}",
                details={"method": name},
            ) from None
        except orjson.JSONEncodeError as exc:
            # orjson refuses two things here: integers past 64 bits, and nesting past its depth limit (255).
            problem = "they nest too deeply" if "ecursion" in str(exc) else "a number is out of range"
            raise InvalidRequest(f"invalid {name} params: {problem}", details={"method": name}) from None
        return spec, params

    async def _call(self, name: str, raw_params: Any, caller: Caller, parts: HandlerParts, *,
                    request_id: str) -> Any:
        spec, params = self._prepare(name, raw_params, caller)
        target = None
        try:
            for access in spec.access:  # the one authorization model decides, before the handler runs
                found = await parts.access.authorize(access, params, caller)
                target = target or found
        except RpcError:
            raise
        except Exception as exc:
            raise _failure(spec, exc, request_id) from None
        ctx = CallContext(caller=caller, parts=parts, request_id=request_id, method=spec.name, target=target)

        async def invoke() -> Any:
            try:
                return await spec.handler(params, ctx)
            except RpcError:
                raise
            except Exception as exc:
                raise _failure(spec, exc, request_id) from None

        key = getattr(params, "idempotencyKey", None) if spec.idempotent else None
        owner = caller.person_id or caller.run_session
        if isinstance(key, str) and key and owner is not None:
            # A person's (or a run's) keys are their own: another's same key must not answer them with that one's
            # result (a run id, a new /mcp token). Hashed to fit the stored key's length.
            kind = "person" if caller.person_id is not None else "run"
            key = f"{kind}:{hashlib.sha256(f'{owner}:{key}'.encode()).hexdigest()[:48]}"
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
                try:  # a secret in the answer stays out of the database: a replay after a restart lacks it
                    kept = ({k: v for k, v in result.items() if k not in spec.secret}
                            if spec.secret and isinstance(result, dict) else result)
                    await durable.put(spec.name, key, kept)
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
            who = ("your sign-in (a member's or guest's: their own conversations only)" if caller.person_id
                   else "this agent run (owner tools only)")
            raise Forbidden(f"{spec.name} is not available to {who}", details={"code": "RUN_TIER_FORBIDDEN"})
