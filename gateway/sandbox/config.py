"""``agents.defaults.sandbox`` and ``agents.list[].sandbox``: how agent runs are confined (docs/sandbox.md)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from gateway.config.sections import Section

__all__ = ["SandboxBind", "SandboxConfig", "SandboxMode", "SandboxNetwork", "SandboxOverride", "egress_hosts"]

SandboxMode = Literal["off", "non-owner", "all"]
SandboxNetwork = Literal["none", "loopback", "open"]
_HOST = re.compile(r"(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*")


def egress_hosts(hosts: list[str] | None) -> list[str] | None:
    """An egress allowlist as the proxy matches it: lowercase names or ``*.suffix``; a URL or a port is an error."""
    if hosts is None:
        return None
    out = []
    for i, host in enumerate(hosts):
        name = host.strip().lower().rstrip(".")
        if not _HOST.fullmatch(name):
            raise ValueError(f"[{i}] {host!r}: give a host name (or *.suffix), without a scheme, port or path")
        out.append(name)
    return out


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
    egress: list[str] | None = Field(None, description="The owner's runs without a network: the hosts (or "
                                     "*.suffix) they may reach over HTTPS through the gateway's proxy; unset: "
                                     "modelGateway.egress.allow.")
    othersEgress: list[str] | None = Field(None, description="The same for runs of anyone but the owner (and "
                                           "cron); unset: modelGateway.egress.allow, [] none.")
    binds: list[SandboxBind] = Field(default_factory=list, description="More host paths shown to the runs.")

    @field_validator("egress", "othersEgress")
    @classmethod
    def _hosts(cls, value: list[str] | None) -> list[str] | None:
        return egress_hosts(value)

    def network_for(self, *, owner: bool) -> SandboxNetwork:
        """The network of an owner's run, or of anyone else's."""
        return self.network if owner else self.othersNetwork

    def egress_for(self, *, owner: bool, default: list[str]) -> list[str]:
        """The hosts a run of this tier reaches through the proxy when it has no network (``default``: the
        ``modelGateway.egress.allow`` list)."""
        chosen = self.egress if owner else self.othersEgress
        return default if chosen is None else chosen
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
    egress: list[str] | None = Field(None, description="Replaces the default's egress (the owner's runs).")
    othersEgress: list[str] | None = Field(None, description="Replaces the default's othersEgress.")
    binds: list[SandboxBind] | None = Field(None, description="Added to the default's binds.")
    passEnv: list[str] | None = Field(None, description="Added to the default's passEnv.")

    @field_validator("egress", "othersEgress")
    @classmethod
    def _hosts(cls, value: list[str] | None) -> list[str] | None:
        return egress_hosts(value)

    def over(self, base: SandboxConfig) -> SandboxConfig:
        """The effective settings of an agent whose default is ``base``."""
        return base.model_copy(update={
            "mode": self.mode or base.mode, "network": self.network or base.network,
            "othersNetwork": self.othersNetwork or base.othersNetwork,
            "egress": base.egress if self.egress is None else self.egress,
            "othersEgress": base.othersEgress if self.othersEgress is None else self.othersEgress,
            "binds": [*base.binds, *(self.binds or [])], "passEnv": [*base.passEnv, *(self.passEnv or [])]})
