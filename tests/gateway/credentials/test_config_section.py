"""The model gateway's settings are ordinary config: ``config.get`` shows them as they are (none is hidden, and a
config sent back as it was read still validates), and only the owner changes them."""

from __future__ import annotations

from gateway.config.model import Config
from gateway.config.owner_only import is_owner_only
from gateway.redaction import REDACTED, redact


def test_the_settings_round_trip_through_config_get() -> None:
    cfg = Config(agents={"list": [{"id": "main", "credentialsMode": "shared"}]},
                 modelGateway={"egress": {"allow": ["pypi.org"]}, "othersModels": ["claude-haiku-*"]})
    shown = redact(cfg.model_dump(mode="json"))
    hidden = [k for k, v in shown["modelGateway"].items() if v == REDACTED]
    assert hidden == [], hidden  # nothing: Gemini CLI's public client secret is no config default
    assert shown["agents"]["list"][0]["credentialsMode"] == "shared"
    assert Config.model_validate(shown).modelGateway.egress.allow == ["pypi.org"]


def test_only_the_owner_changes_them() -> None:
    assert is_owner_only(("modelGateway", "egress", "allow"))
    assert is_owner_only(("agents", "list", "0", "credentialsMode"))
