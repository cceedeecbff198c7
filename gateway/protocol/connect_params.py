"""The handshake's pydantic models: the ``connect`` request's params.

Kept apart from ``gateway.protocol`` so that clients which only speak frames (the MCP shim)
never import pydantic.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ClientInfo", "ConnectAuth", "ConnectParams", "DeviceProof"]


class ClientInfo(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str = Field(min_length=1, max_length=128)
    version: str = Field(default="", max_length=128)
    platform: str = Field(default="", max_length=128)
    mode: str = Field(min_length=1, max_length=64)
    displayName: str | None = Field(default=None, max_length=256)
    deviceFamily: str | None = Field(default=None, max_length=128)
    modelIdentifier: str | None = Field(default=None, max_length=256)
    instanceId: str | None = Field(default=None, max_length=256)


class ConnectAuth(BaseModel):
    model_config = ConfigDict(extra="allow")

    token: str | None = Field(default=None, max_length=4096)
    password: str | None = Field(default=None, max_length=4096)
    deviceToken: str | None = Field(default=None, max_length=4096)
    bootstrapToken: str | None = Field(default=None, max_length=4096)


class DeviceProof(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str = Field(min_length=1, max_length=128)
    publicKey: str = Field(min_length=1, max_length=512)
    signature: str = Field(min_length=1, max_length=512)
    signedAt: int
    nonce: str = Field(min_length=1, max_length=256)


class ConnectParams(BaseModel):
    """Params of the first request, ``connect``."""

    model_config = ConfigDict(extra="allow")

    minProtocol: int
    maxProtocol: int
    client: ClientInfo
    role: Literal["operator", "node"] = "operator"
    scopes: list[str] = Field(default_factory=list, max_length=32)
    auth: ConnectAuth | None = None
    device: DeviceProof | None = None
    caps: list[str] | None = None
    commands: list[str] | None = None
    permissions: dict[str, Any] | None = None
    locale: str | None = None
    userAgent: str | None = None
