"""The ``modelGateway`` section: the model gateway, its OAuth endpoints, prices and egress (docs/credentials.md)."""

from __future__ import annotations

from pydantic import Field, field_validator

from gateway.config.sections import Section
from gateway.sandbox.config import egress_hosts

__all__ = ["EgressConfig", "ModelGatewayConfig", "ModelPrice"]


class ModelPrice(Section):
    """US dollars per million tokens, for a model whose CLI states no cost (the budget is enforced at the wire)."""

    input: float = Field(0, ge=0)
    output: float = Field(0, ge=0)
    cacheRead: float = Field(0, ge=0)
    cacheWrite: float = Field(0, ge=0)


class EgressConfig(Section):
    """What a run without a network may still reach through the gateway's HTTPS ``CONNECT`` proxy."""

    allow: list[str] = Field(default_factory=list, description="Host names (or *.suffix) runs without a network "
                             "may reach over HTTPS through the gateway's proxy; empty: none (the model gateway and "
                             "MCP only). An agent's sandbox.egress (the owner's runs) and sandbox.othersEgress "
                             "(anyone else's) replace it per tier.")
    ports: list[int] = Field(default_factory=lambda: [443], description="The ports those hosts may be reached on.")
    allowAddresses: list[str] = Field(default_factory=list, description="Private addresses an allowed host may "
                                      "still resolve to (an internal mirror); cloud metadata addresses never.")

    @field_validator("allow")
    @classmethod
    def _hosts(cls, value: list[str]) -> list[str]:
        return egress_hosts(value) or []


class ModelGatewayConfig(Section):
    """The model gateway: runs hold a stand-in, the gateway adds the real credential (docs/credentials.md)."""

    enabled: bool = Field(True, description="Front the agents' model APIs: no run holds a real API key or login. "
                          "Off: runs hold the credentials as before (the owner's runs only; others are refused).")
    anthropicTokenUrl: str = Field("https://console.anthropic.com/v1/oauth/token",
                                   description="Where the gateway refreshes a Claude subscription login.")
    anthropicClientId: str = Field("9d1c250a-e61b-44d9-88ed-5944d1962f5e",
                                   description="The OAuth client id Claude Code's login uses.")
    googleTokenUrl: str = Field("https://oauth2.googleapis.com/token",
                                description="Where the gateway refreshes Gemini CLI's Google login.")
    googleClientId: str = Field("681255809395-oo8ft2oprdrnp9e3aqf6av3hmdib135j.apps.googleusercontent.com",
                                description="The OAuth client Gemini CLI's login uses (a public installed app's).")
    googleClientSecret: str | None = Field(None, description="That installed app's client secret; unset: the one "
                                           "public in Gemini CLI's source (Google's installed-app flow).")
    openaiTokenUrl: str = Field("https://auth.openai.com/oauth/token",
                                description="Where the gateway refreshes Codex's ChatGPT login.")
    openaiClientId: str = Field("app_EMoamEEZ73f0CkXaXp7hrann",
                                description="The OAuth client id Codex's ChatGPT login uses (public in its source).")
    prices: dict[str, ModelPrice] = Field(default_factory=dict, description="Per model name (or a glob, "
                                          "claude-*): the price per million tokens the budget counts with.")
    egress: EgressConfig = Field(default_factory=EgressConfig)
    othersModels: list[str] = Field(default_factory=list, description="The models (names or globs, claude-haiku-*) "
                                    "runs of anyone but the owner may ask for; empty: any.")


GEMINI_CLI_CLIENT_SECRET = "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"
"""Gemini CLI's installed-app OAuth client secret, public in its source. Not a config default: a setting named
like a secret is hidden by ``config.get``, and a whole config sent back as read would then lose it."""
