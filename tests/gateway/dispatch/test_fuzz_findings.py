"""What the 10,000-case params fuzzer found (CI, 2026-11-29), each kept as a case of its own: params that made a
method fail inside, or left a request unanswered. (A wire integer may be up to 2**64 - 1; SQLite stores at most
2**63 - 1.)"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gateway.audit.methods import AuditListParams
from gateway.dispatch.registry import NoParams, validate_wire
from gateway.methods.health import PresenceParams
from gateway.protocol import describe_validation_error


def _described(model: type, raw: object) -> str:
    with pytest.raises(ValidationError) as err:
        validate_wire(model, raw)
    return describe_validation_error(err.value)


def test_a_field_named_like_a_validator_step_is_described_not_a_crash() -> None:
    # pydantic's own "function-..." steps are dropped from a location; a key of that name left the location
    # empty, and describing the error raised IndexError outside the handler: the request was never answered.
    assert _described(NoParams, {"function-after": 1}).startswith("at root:")
    assert "unexpected property 'x'" in _described(NoParams, {"x": 1, "function-plain": 2})


def test_times_past_what_sqlite_holds_are_refused_naming_the_field() -> None:
    # audit.log.list {since: 2**63 + 5} reached SQLite and failed there ("Python int too large").
    assert "since" in _described(AuditListParams, {"since": 2**63 + 5}) and "9999" in _described(
        AuditListParams, {"since": 2**63 + 5})
    assert "before" in _described(AuditListParams, {"before": "1:" + "9" * 19})
    assert validate_wire(AuditListParams, {"since": 253_402_300_799_999, "before": "1:" + "9" * 18})


def test_a_presence_page_past_any_crowd_is_refused_naming_offset() -> None:
    # system-presence {offset: 2**63} failed inside (islice's bound).
    assert "offset" in _described(PresenceParams, {"offset": 2**63})
    assert validate_wire(PresenceParams, {"offset": 1_000_000_000, "limit": 10})
