"""The ``connect`` exchange as values: every decision of the handshake, with no I/O.

In the manner of websockets' sans-I/O core: ``gateway.server.app`` receives the frame, asks these functions
what to do, and only sends and closes. Each function takes plain values (the parsed params, the
gateway token, what the throttle and the run-token table said, the clock) and returns a value or raises
a ``Refusal`` that carries the error to send and the close code, so each rule is tested by calling it
(``tests/gateway/server/test_handshake_values.py``) without a socket, a gateway process or an event loop.

The order of the rules is the protocol's: params must parse, the protocol ranges must meet, a locked-out
address is refused before its credentials are looked at, then the token (the gateway's own or an agent
run's) and the optional device proof; finally the scopes are narrowed to what was both asked for and
allowed, and the caller and the ``hello-ok`` payload are built.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Any, Protocol

from gateway.dispatch.dispatcher import OPERATOR_SCOPES, READ, Caller, SessionScope
from gateway.protocol import (
    CLOSE_POLICY,
    CLOSE_PROTOCOL,
    PROTOCOL_VERSION,
    SUPPORTED_PROTOCOLS,
    InvalidRequest,
    RpcError,
)
from gateway.protocol.connect_params import ConnectParams
from gateway.server.auth import check_token, operator_device_token, verify_device

__all__ = [
    "Accepted",
    "Refusal",
    "RunGrantLike",
    "authenticate",
    "caller_for",
    "hello_ok",
    "narrow_scopes",
    "negotiate",
    "rate_limited",
]

class Refusal(Exception):
    """The handshake ends here: send ``error`` in answer to the connect request, then close with ``close_code``.

    ``counts_as_failure`` says whether the attempt feeds the address's failure throttle (a wrong gateway
    token does; a stale agent-run token does not: run tokens are 256-bit random, so it is no guess).
    """

    def __init__(self, error: RpcError, close_code: int = CLOSE_POLICY, *, counts_as_failure: bool = False) -> None:
        super().__init__(error.message)
        self.error = error
        self.close_code = close_code
        self.counts_as_failure = counts_as_failure


class RunGrantLike(Protocol):
    """What the handshake reads of an agent run's token grant (``gateway.agents.tokens.RunGrant``)."""

    @property
    def scopes(self) -> frozenset[str]: ...

    @property
    def methods(self) -> frozenset[str] | None: ...

    @property
    def confine(self) -> SessionScope | None: ...

    @property
    def reach(self) -> tuple[str, ...]: ...

    @property
    def person_id(self) -> str | None: ...

    @property
    def signin_id(self) -> str | None: ...

    @property
    def session_key(self) -> str | None: ...

    @property
    def run_id(self) -> str | None: ...

    @property
    def node_id(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class Accepted:
    """Credentials that passed: the verified device (if a proof came) and the run grant (if a run token)."""

    device_id: str | None
    run_grant: RunGrantLike | None


def negotiate(params: ConnectParams) -> int:
    """The protocol version both sides speak: the newest in both ranges.

    Raises:
        Refusal: ``PROTOCOL_MISMATCH`` with the version we expect, close 1002.
    """
    offered = [v for v in SUPPORTED_PROTOCOLS if params.minProtocol <= v <= params.maxProtocol]
    if not offered:
        raise Refusal(InvalidRequest(
            f"protocol mismatch: server speaks {SUPPORTED_PROTOCOLS[0]}..{SUPPORTED_PROTOCOLS[-1]}",
            details={"code": "PROTOCOL_MISMATCH", "expectedProtocol": PROTOCOL_VERSION},
        ), CLOSE_PROTOCOL)
    return offered[-1]


def rate_limited(retry_after_s: float) -> Refusal | None:
    """The refusal for an address the throttle has locked for ``retry_after_s`` more seconds (None: not locked)."""
    if retry_after_s <= 0:
        return None
    return Refusal(InvalidRequest(
        "too many failed attempts: try again later",
        details={"code": "AUTH_RATE_LIMITED"}, retryable=True, retry_after_ms=int(retry_after_s * 1000),
    ))


def given_token(params: ConnectParams) -> str | None:
    """The shared secret the client presents (a token, or the same value as a password)."""
    return (params.auth.token or params.auth.password) if params.auth else None


def authenticate(params: ConnectParams, *, gateway_token: str, run_grant: RunGrantLike | None, nonce: str,
                 now_ms: int | None = None, looks_like_run_token: bool = False,
                 node_token_valid: bool | None = None) -> Accepted:
    """Check the token (the gateway's, or a live agent run's: ``run_grant``) and the optional device proof.

    Args:
        params: the connect params.
        gateway_token: the gateway's own token.
        run_grant: the grant of the presented token when it is a live run token, else None.
        nonce: the challenge this socket was sent.
        now_ms: the clock, for the device proof's freshness (tests pass a fixed one).
        looks_like_run_token: the presented token has a run token's shape (then a failure is no guess).
        node_token_valid: for a node presenting ``auth.deviceToken`` and no gateway token, whether that is
            its current node token (None: no node token presented). It stands in for the gateway token;
            the device proof that follows binds it to the node's key.

    Raises:
        Refusal: ``AUTH_REQUIRED``, ``AUTH_TOKEN_MISMATCH`` or a ``DEVICE_AUTH_*`` code, close 1008.
    """
    given = given_token(params)
    device_token = params.auth.deviceToken if params.auth else None
    try:
        if run_grant is None and not given and device_token and params.role == "operator":
            # An operator device presenting the token its hello-ok gave it (a reloaded Control UI): the proof
            # must come with it, and the token must be the one derived for that device from our token.
            if params.device is None:
                raise InvalidRequest("unauthorized: a device token needs the device's proof (connect.device)",
                                     details={"code": "AUTH_DEVICE_TOKEN_MISMATCH"})
            proven = verify_device(params, nonce=nonce, now_ms=now_ms)
            expected = operator_device_token(gateway_token, proven)
            if not hmac.compare_digest(expected.encode(), device_token.encode()):
                # 256 bits derived from the gateway token: a stale one (the gateway token changed) is no guess.
                raise Refusal(InvalidRequest(
                    "unauthorized: this device's sign-in is no longer valid (the gateway token changed): sign in "
                    "with the gateway token again", details={"code": "AUTH_DEVICE_TOKEN_MISMATCH"}))
            return Accepted(device_id=proven, run_grant=None)
        if run_grant is None and node_token_valid is not None and not given and params.role == "node":
            if not node_token_valid:
                raise InvalidRequest("unauthorized: node token is not valid (pair the node again, or connect "
                                     "with the gateway token)", details={"code": "AUTH_TOKEN_MISMATCH"})
        elif run_grant is None:
            check_token(gateway_token, given)
        elif params.role != "operator":
            raise InvalidRequest("unauthorized: a run token is for operator connections only",
                                 details={"code": "AUTH_TOKEN_MISMATCH"})
        device_id = verify_device(params, nonce=nonce, now_ms=now_ms) if params.device else None
    except InvalidRequest as err:
        # A connect that offers no credential at all (a page opened without its token, retrying) is no guess:
        # only a credential that was wrong counts towards the address's lockout.
        offered = bool(given or device_token or (params.auth and params.auth.bootstrapToken))
        raise Refusal(err, counts_as_failure=offered and not looks_like_run_token) from None
    return Accepted(device_id=device_id, run_grant=run_grant)


def narrow_scopes(params: ConnectParams, run_grant: RunGrantLike | None) -> frozenset[str]:
    """What the caller gets: the operator scopes it asked for that exist, capped by its run grant; at least
    ``operator.read`` for an operator (unknown names are dropped, so hello-ok shows exactly what was granted)."""
    if params.role != "operator":
        return frozenset()
    scopes = frozenset(params.scopes).intersection(OPERATOR_SCOPES)
    if run_grant is not None:
        scopes &= run_grant.scopes
    return scopes or frozenset({READ})


def caller_for(params: ConnectParams, accepted: Accepted, *, conn_id: str, remote: str) -> Caller:
    """The caller fixed for the connection's life."""
    return Caller(
        conn_id=conn_id,
        role=params.role,
        scopes=narrow_scopes(params, accepted.run_grant),
        client_id=params.client.id,
        client_mode=params.client.mode,
        remote=remote,
        device_id=accepted.device_id,
        display_name=params.client.displayName,
        extra={"version": params.client.version, "platform": params.client.platform,
               "caps": params.caps or [], "commands": params.commands or [],
               **({"signinId": accepted.run_grant.signin_id}
                  if accepted.run_grant is not None and accepted.run_grant.signin_id else {}),
               # the run whose token it is: the connection is closed when the run ends (RunTokens.on_revoke)
               **({"runId": accepted.run_grant.run_id}
                  if accepted.run_grant is not None and accepted.run_grant.run_id else {})},
        methods=accepted.run_grant.methods if accepted.run_grant is not None else None,
        confined_to=accepted.run_grant.confine if accepted.run_grant is not None else None,
        reach=accepted.run_grant.reach if accepted.run_grant is not None else None,
        person_id=accepted.run_grant.person_id if accepted.run_grant is not None else None,
        run_session=accepted.run_grant.session_key if accepted.run_grant is not None else None,
        run_node=accepted.run_grant.node_id if accepted.run_grant is not None else None,
    )


def hello_ok(*, protocol: int, caller: Caller, server: dict[str, Any], methods: list[str], events: list[str],
             snapshot: dict[str, Any], policy: dict[str, Any]) -> dict[str, Any]:
    """The ``hello-ok`` payload, from values the driver collected."""
    return {
        "type": "hello-ok",
        "protocol": protocol,
        "server": server,
        "features": {"methods": methods, "events": events, "capabilities": []},
        "snapshot": snapshot,
        "policy": policy,
        "auth": {"role": caller.role, "scopes": sorted(caller.scopes)},
    }
