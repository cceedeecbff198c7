"""The ``nodes`` config section: which node commands the gateway lets an agent invoke, and node pairing.

Read at every call (``gateway.devices.policy``), so a change applies live without a restart.
"""

from __future__ import annotations

from pydantic import Field

from gateway.config.sections import Section

__all__ = ["NodesConfig"]


class NodesConfig(Section):
    allowCommands: list[str] = Field(
        default_factory=list,
        description="Commands allowed on top of the platform defaults (glob patterns: 'camera.*').")
    denyCommands: list[str] = Field(
        default_factory=list,
        description="Commands refused whatever else allows them (glob patterns; deny wins).")
    autoApproveLoopback: bool = Field(
        False, description="Pair a node connecting from 127.0.0.1/::1 without asking the owner (off: every node "
                           "waits for node.pair.approve).")
    invokeTimeoutMs: int = Field(30_000, ge=100, le=600_000,
                                 description="How long node.invoke waits for a node when the call gives no timeoutMs.")
    maxPendingRequests: int = Field(100, ge=1, le=10_000,
                                    description="Pending pairing requests kept at most (the oldest are dropped).")
    agentFilesMaxBytes: int = Field(
        5 * 1024 * 1024, ge=1024, le=200 * 1024 * 1024,
        description="What files may travel with a turn on a node (docs/nodes.md#files-both-ways): the attachments "
                    "copied to the node for one turn, in total (within what gateway.maxBufferedBytes lets one frame "
                    "to the node be, as base64), and one file its agent sends back (within gateway.maxPayload).")
    browserNode: str | None = Field(
        None, max_length=256, description="The node browser.request uses when several offer a browser (id, id "
                                          "prefix or name); unset: the only browser node connected.")
