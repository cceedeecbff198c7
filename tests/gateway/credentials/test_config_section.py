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


def test_egress_lists_per_tier_are_host_names_and_the_owners_alone() -> None:
    cfg = Config(agents={"defaults": {"sandbox": {"othersEgress": ["PyPI.org."]}},
                        "list": [{"id": "main", "sandbox": {"egress": ["*.github.com"], "othersEgress": []}}]})
    main = cfg.agents.sandbox_for(cfg.agents.list[0])
    assert (main.egress, main.othersEgress) == (["*.github.com"], [])  # [] replaces the default's: none
    assert cfg.agents.defaults.sandbox.othersEgress == ["pypi.org"]  # as the proxy matches it
    assert main.egress_for(owner=False, default=["x.org"]) == [] and \
        cfg.agents.defaults.sandbox.egress_for(owner=True, default=["x.org"]) == ["x.org"]  # unset: the global
    for bad, where in ((["https://pypi.org"], "othersEgress"), (["pypi.org:443"], "othersEgress"),
                       (["a b"], "othersEgress")):
        try:
            Config(agents={"list": [{"id": "main", "sandbox": {where: bad}}]})
        except ValueError as exc:
            assert f"sandbox.{where}" in str(exc) and "host name" in str(exc), str(exc)
        else:
            raise AssertionError(f"{bad} was accepted")
    try:
        Config(modelGateway={"egress": {"allow": ["http://x"]}})
    except ValueError as exc:
        assert "egress.allow" in str(exc), str(exc)
    else:
        raise AssertionError("a URL was accepted in modelGateway.egress.allow")
    assert is_owner_only(("agents", "list", "0", "sandbox", "othersEgress"))
    assert is_owner_only(("agents", "defaults", "sandbox", "othersEgress"))
