"""``agents.defaults.sandbox`` and ``agents.list[].sandbox``: how agent runs are confined (docs/sandbox.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from gateway.config.sections import Section

__all__ = ["SandboxBind", "SandboxConfig", "SandboxMode", "SandboxNetwork", "SandboxOverride"]

SandboxMode = Literal["off", "non-owner", "all"]
SandboxNetwork = Literal["none", "loopback", "open"]


class SandboxBind(Section):
    """A host folder or file the owner shows to this agent's runs (every tier), at the same path inside."""

    path: str = Field(min_length=1, max_length=4096, description="An absolute path on the gateway's machine.")
    writable: bool = Field(False, description="Read-write inside the sandbox (default: read-only).")

    @field_validator("path")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not value.startswith(("/", "~")):
            raise ValueError("must be an absolute path (or start with ~)")
        return value


class SandboxConfig(Section):
    """The default for every agent (``agents.defaults.sandbox``)."""

    mode: SandboxMode = Field("all", description="Which runs are sandboxed: all (default), non-owner (only runs "
                              "for people who are not the owner, and cron), or off (none: an agent run can "
                              "then read the gateway's config, database and token).")
    network: SandboxNetwork = Field("open", description="The owner's runs: open: the machine's network (the "
                                    "model's API, and the services on this machine's loopback); loopback and "
                                    "none: a network of its own that reaches nothing outside the sandbox (the "
                                    "gateway still answers its tools and fronts its model API).")
    othersNetwork: SandboxNetwork = Field("none", description="Runs of anyone but the owner (and cron): none by "
                                          "default, reaching only the gateway (its model gateway and tools) and "
                                          "the hosts in modelGateway.egress.allow through its HTTPS proxy.")
    binds: list[SandboxBind] = Field(default_factory=list, description="More host paths shown to the runs.")

    def network_for(self, *, owner: bool) -> SandboxNetwork:
        """The network of an owner's run, or of anyone else's."""
        return self.network if owner else self.othersNetwork
    user: str | None = Field(None, min_length=1, description="Where bubblewrap cannot run: the Unix user agent "
                             "runs start as (the gateway must be root to switch to it).")
    passEnv: list[str] = Field(default_factory=list, description="Secret-looking environment variables of the "
                               "gateway that runs may still see (names; credentials of the agent's own CLI "
                               "pass without this).")


class SandboxOverride(Section):
    """An agent's own changes to the default (``agents.list[].sandbox``): unset fields keep the default's."""

    mode: SandboxMode | None = None
    network: SandboxNetwork | None = None
    othersNetwork: SandboxNetwork | None = None
    binds: list[SandboxBind] | None = Field(None, description="Added to the default's binds.")
    passEnv: list[str] | None = Field(None, description="Added to the default's passEnv.")

    def over(self, base: SandboxConfig) -> SandboxConfig:
        """The effective settings of an agent whose default is ``base``."""
        return base.model_copy(update={
            "mode": self.mode or base.mode, "network": self.network or base.network,
            "othersNetwork": self.othersNetwork or base.othersNetwork,
            "binds": [*base.binds, *(self.binds or [])], "passEnv": [*base.passEnv, *(self.passEnv or [])]})
