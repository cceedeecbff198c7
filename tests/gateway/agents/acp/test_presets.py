"""``runtime: acp`` in the config: the presets the config accepts are the ones the runtime knows, and an entry that
names neither a preset nor a command is refused with a message naming the fields."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gateway.agents.runtimes import runtime_for
from gateway.agents.runtimes.acp_presets import PRESETS
from gateway.config import AgentConfig
from gateway.config.acp import ACP_AGENTS


def test_the_config_and_the_runtime_know_the_same_presets() -> None:
    assert set(PRESETS) == set(ACP_AGENTS)


@pytest.mark.parametrize(("entry", "says"), [
    ({"runtime": "acp"}, "needs agent"),
    ({"runtime": "acp", "agent": "nope"}, "unknown ACP agent 'nope'"),
    ({"runtime": "claude", "agent": "opencode"}, "settings of runtime acp"),
])
def test_bad_entries_are_refused(entry: dict, says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        AgentConfig(id="a", **entry)


def test_a_preset_and_an_override() -> None:
    rt = runtime_for(AgentConfig(id="a", runtime="acp", agent="gemini", acp={"command": "/opt/gemini"}))
    assert (rt.executable, rt.args, rt.credential_env) == ("/opt/gemini", ("--acp",), ("GEMINI_*", "GOOGLE_*"))
    bare = runtime_for(AgentConfig(id="b", runtime="acp", acp={"command": "goose", "args": ["acp"]}))
    assert (bare.executable, bare.args, bare.credential_env) == ("goose", ("acp",), ())
