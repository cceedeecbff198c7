"""The handshake's decisions as values (``gateway.server.handshake``): no socket, no gateway process, no event loop."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.agents.tokens import RunGrant
from gateway.protocol import CLOSE_POLICY, CLOSE_PROTOCOL, PROTOCOL_VERSION
from gateway.protocol.connect_params import ConnectParams
from gateway.server import handshake
from tests.support.devices import DeviceKey
from tests.support.ws import connect_params

TOKEN = "the-gateway-token"
NONCE = "nonce-1"


def params(**kw: Any) -> ConnectParams:
    raw = kw.pop("raw", None) or connect_params(TOKEN)
    raw.update(kw)
    return ConnectParams.model_validate(raw)


def code(refusal: handshake.Refusal) -> str:
    return (refusal.error.details or {}).get("code", "")


def test_the_newest_common_protocol_is_chosen() -> None:
    assert handshake.negotiate(params(minProtocol=3, maxProtocol=4)) == 4
    assert handshake.negotiate(params(minProtocol=1, maxProtocol=3)) == 3


def test_ranges_that_do_not_meet_are_a_protocol_mismatch_closed_1002() -> None:
    with pytest.raises(handshake.Refusal) as caught:
        handshake.negotiate(params(minProtocol=5, maxProtocol=9))
    assert code(caught.value) == "PROTOCOL_MISMATCH" and caught.value.close_code == CLOSE_PROTOCOL
    assert caught.value.error.details["expectedProtocol"] == PROTOCOL_VERSION


def test_a_locked_address_is_refused_with_when_to_come_back() -> None:
    assert handshake.rate_limited(0) is None
    refusal = handshake.rate_limited(12.5)
    assert refusal is not None and code(refusal) == "AUTH_RATE_LIMITED"
    assert refusal.error.retryable and refusal.error.retry_after_ms == 12_500


def test_the_gateway_token_passes_and_a_wrong_one_counts_as_a_failure() -> None:
    ok = handshake.authenticate(params(), gateway_token=TOKEN, run_grant=None, nonce=NONCE)
    assert ok.device_id is None and ok.run_grant is None
    with pytest.raises(handshake.Refusal) as caught:
        handshake.authenticate(params(raw=connect_params("wrong")), gateway_token=TOKEN, run_grant=None, nonce=NONCE)
    assert code(caught.value) == "AUTH_TOKEN_MISMATCH" and caught.value.counts_as_failure
    assert caught.value.close_code == CLOSE_POLICY
    with pytest.raises(handshake.Refusal) as missing:
        handshake.authenticate(params(auth=None), gateway_token=TOKEN, run_grant=None, nonce=NONCE)
    assert code(missing.value) == "AUTH_REQUIRED"
    assert not missing.value.counts_as_failure  # no credential offered: a page without its token, no guess


def test_a_device_signs_in_again_with_the_device_token_its_hello_gave_it() -> None:
    """What a reloaded Control UI does: no gateway token, its device token and its device proof."""
    from gateway.server.auth import operator_device_token

    device, other = DeviceKey(), DeviceKey()
    issued = operator_device_token(TOKEN, device.id)
    again = ConnectParams.model_validate(device.connect_params(None, NONCE, auth={"deviceToken": issued}))
    assert handshake.authenticate(again, gateway_token=TOKEN, run_grant=None, nonce=NONCE).device_id == device.id
    # Another device's key cannot use it, and a gateway token that changed revokes it (no guess: not counted).
    stolen = ConnectParams.model_validate(other.connect_params(None, NONCE, auth={"deviceToken": issued}))
    with pytest.raises(handshake.Refusal) as caught:
        handshake.authenticate(stolen, gateway_token=TOKEN, run_grant=None, nonce=NONCE)
    assert code(caught.value) == "AUTH_DEVICE_TOKEN_MISMATCH"
    with pytest.raises(handshake.Refusal) as rotated:
        handshake.authenticate(again, gateway_token="a-new-gateway-token", run_grant=None, nonce=NONCE)
    assert code(rotated.value) == "AUTH_DEVICE_TOKEN_MISMATCH" and not rotated.value.counts_as_failure
    # Without the proof a device token is worth nothing.
    bare = params(raw=connect_params(None, auth={"deviceToken": issued}))
    with pytest.raises(handshake.Refusal) as unproven:
        handshake.authenticate(bare, gateway_token=TOKEN, run_grant=None, nonce=NONCE)
    assert code(unproven.value) == "AUTH_DEVICE_TOKEN_MISMATCH" and unproven.value.counts_as_failure


def test_a_stale_run_token_is_refused_but_is_no_guessing_attempt() -> None:
    with pytest.raises(handshake.Refusal) as caught:
        handshake.authenticate(params(raw=connect_params("run-stale")), gateway_token=TOKEN, run_grant=None,
                             nonce=NONCE, looks_like_run_token=True)
    assert not caught.value.counts_as_failure


def test_a_run_token_is_for_operators_only_and_caps_the_scopes() -> None:
    grant = RunGrant(frozenset({"operator.read", "operator.write"}), frozenset({"health"}))
    with pytest.raises(handshake.Refusal):
        handshake.authenticate(params(raw=connect_params("run-x"), role="node"), gateway_token=TOKEN,
                             run_grant=grant, nonce=NONCE)
    p = params(raw=connect_params("run-x"), scopes=["operator.admin", "operator.write", "made.up"])
    accepted = handshake.authenticate(p, gateway_token=TOKEN, run_grant=grant, nonce=NONCE)
    caller = handshake.caller_for(p, accepted, conn_id="c1", remote="127.0.0.1")
    assert caller.scopes == frozenset({"operator.write"}) and caller.methods == frozenset({"health"})


def test_scopes_drop_unknown_names_and_default_to_read() -> None:
    assert handshake.narrow_scopes(params(scopes=["made.up"]), None) == frozenset({"operator.read"})
    assert handshake.narrow_scopes(params(scopes=["operator.admin"]), None) == frozenset({"operator.admin"})
    assert handshake.narrow_scopes(params(role="node", scopes=["operator.admin"]), None) == frozenset()


def test_a_device_proof_is_verified_and_a_tampered_one_refused() -> None:
    device = DeviceKey()
    p = ConnectParams.model_validate(device.connect_params(TOKEN, NONCE))
    assert handshake.authenticate(p, gateway_token=TOKEN, run_grant=None, nonce=NONCE).device_id == device.id
    bad = ConnectParams.model_validate(device.connect_params(TOKEN, NONCE, tamper=True))
    with pytest.raises(handshake.Refusal) as caught:
        handshake.authenticate(bad, gateway_token=TOKEN, run_grant=None, nonce=NONCE)
    assert code(caught.value) == "DEVICE_AUTH_SIGNATURE_INVALID" and caught.value.counts_as_failure
    other_nonce = ConnectParams.model_validate(device.connect_params(TOKEN, NONCE))
    with pytest.raises(handshake.Refusal) as replay:
        handshake.authenticate(other_nonce, gateway_token=TOKEN, run_grant=None, nonce="another-challenge")
    assert code(replay.value) == "DEVICE_AUTH_NONCE_MISMATCH"


def test_hello_ok_is_built_from_values() -> None:
    p = params(scopes=["operator.write"])
    caller = handshake.caller_for(p, handshake.Accepted(None, None), conn_id="c9", remote="::1")
    hello = handshake.hello_ok(protocol=4, caller=caller, server={"version": "x", "connId": "c9"},
                             methods=["health"], events=["tick"], snapshot={"presence": []},
                             policy={"maxPayload": 1})
    assert hello["type"] == "hello-ok" and hello["protocol"] == 4
    assert hello["auth"] == {"role": "operator", "scopes": ["operator.write"]}
    assert hello["features"] == {"methods": ["health"], "events": ["tick"], "capabilities": []}
