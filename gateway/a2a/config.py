"""The ``a2a`` config section: the A2A server's switches and the peers the gateway may call (read by
``gateway.config.model``)."""

from __future__ import annotations

from pydantic import Field, field_validator

from gateway.config.sections import Section, secret

__all__ = ["A2aCard", "A2aConfig", "A2aPeer", "A2aSkill"]


class A2aPeer(Section):
    """Another A2A agent the gateway may call (``a2a_send``, ``remoteclaw a2a send --peer``)."""

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    url: str = Field(min_length=1, max_length=2048, description="The agent's base URL (its card is at "
                     "<url>/.well-known/agent-card.json), http(s).")
    credential: str | None = secret("The bearer token the peer gave us (sent as Authorization: Bearer).")
    description: str | None = Field(None, max_length=500, description="What the peer is for (shown to agents).")

    @field_validator("url")
    @classmethod
    def _http(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"must be an http(s) URL, got {value!r}")
        return value.rstrip("/")


class A2aSkill(Section):
    """One skill an agent's card lists (A2A ``AgentSkill``)."""

    id: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    name: str = Field(min_length=1, max_length=100)
    description: str = Field("", max_length=1000)
    tags: list[str] = Field(default_factory=list, max_length=20)
    examples: list[str] = Field(default_factory=list, max_length=20)


class A2aCard(Section):
    """What an agent's card says beyond its config (its name, runtime, model and projects are read from there)."""

    description: str | None = Field(None, max_length=2000)
    skills: list[A2aSkill] = Field(default_factory=list, max_length=50, description="Replaces the skills read "
                                   "from the agent's config (one general skill, one per project).")


class A2aConfig(Section):
    """A2A both ways (docs/a2a.md)."""

    enabled: bool = Field(False, description="Serve the agents as A2A agents at /a2a/<agentId> (and the default "
                          "agent's card at /.well-known/agent-card.json).")
    agents: list[str] | None = Field(None, description="Which agents are served; unset: every configured agent.")
    requestsPerMinute: int = Field(60, ge=1, le=100_000, description="Requests one peer (one person, or the "
                                   "gateway token) may make per minute; past it, HTTP 429.")
    maxRequestBytes: int = Field(1024 * 1024, ge=1024, le=64 * 1024 * 1024, description="Largest request body.")
    cards: dict[str, A2aCard] = Field(default_factory=dict, description="Per agent id: its card's description "
                                      "and skills.")
    peers: list[A2aPeer] = Field(default_factory=list, description="A2A agents this gateway may call.")

    @field_validator("peers")
    @classmethod
    def _unique(cls, peers: list[A2aPeer]) -> list[A2aPeer]:
        names = [p.name for p in peers]
        for name in names:
            if names.count(name) > 1:
                raise ValueError(f"peer name {name!r} is given twice")
        return peers
