"""The run's context: ``REMOTECLAW_*`` environment variables, read once into a frozen value.

The gateway's agent executor sets these when it spawns an agent CLI; the CLI passes them on to the shim. Missing
required variables are reported by name, because a silently defaulted session key or gateway
would send an agent's actions to the wrong place.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["PROFILES", "REQUIRED", "Context", "ContextError"]

REQUIRED = (
    "REMOTECLAW_GATEWAY_URL",
    "REMOTECLAW_GATEWAY_TOKEN",
    "REMOTECLAW_SESSION_KEY",
    "REMOTECLAW_SIDE_EFFECTS_FILE",
)

PROFILES = ("minimal", "messaging", "coding", "full")
"""Tool profiles (what each selects is in ``mcp_shim.catalog``)."""


class ContextError(Exception):
    """The environment does not describe a usable run; the message names the variable."""


class Context:
    """What the run is: where the gateway is, whose session, which conversation, how trusted.

    A plain slotted class rather than a dataclass: ``dataclasses`` pulls in ``inspect`` (~15 ms),
    and this is on the path to answering ``tools/list``.
    """

    __slots__ = ("account_id", "channel", "gateway_socket", "gateway_token", "gateway_url", "plugin_tools_file",
                 "sender_is_owner", "session_key", "side_effects_file", "thread_id", "to", "tool_profile")

    def __init__(self, *, gateway_url: str, gateway_token: str, session_key: str, side_effects_file: str,
                 channel: str | None = None, account_id: str | None = None, to: str | None = None,
                 thread_id: str | None = None, sender_is_owner: bool = False, tool_profile: str = "full",
                 plugin_tools_file: str | None = None, gateway_socket: str | None = None) -> None:
        self.gateway_url = gateway_url
        self.gateway_socket = gateway_socket
        """A Unix socket to reach the gateway through (a sandboxed run with no network); None: the URL's host."""
        self.gateway_token = gateway_token
        self.session_key = session_key
        self.side_effects_file = side_effects_file
        self.channel = channel
        self.account_id = account_id
        self.to = to
        self.thread_id = thread_id
        self.sender_is_owner = sender_is_owner
        self.tool_profile = tool_profile
        self.plugin_tools_file = plugin_tools_file

    def __repr__(self) -> str:  # the token stays out of logs and tracebacks
        return f"Context(session_key={self.session_key!r}, gateway_url={self.gateway_url!r}, " \
               f"owner={self.sender_is_owner}, profile={self.tool_profile!r})"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Context:
        """Read the context from ``env`` (default ``os.environ``).

        Raises:
            ContextError: a required variable is missing or empty, or the profile is unknown.
        """
        env = os.environ if env is None else env

        def opt(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        missing = [name for name in REQUIRED if not opt(name)]
        if missing:
            raise ContextError(f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set (required)")
        profile = (opt("REMOTECLAW_TOOL_PROFILE") or "full").lower()
        if profile not in PROFILES:
            raise ContextError(
                f"REMOTECLAW_TOOL_PROFILE={profile!r} is not a tool profile (use one of: {', '.join(PROFILES)})"
            )
        return cls(
            gateway_url=opt("REMOTECLAW_GATEWAY_URL") or "",
            gateway_token=opt("REMOTECLAW_GATEWAY_TOKEN") or "",
            session_key=opt("REMOTECLAW_SESSION_KEY") or "",
            side_effects_file=opt("REMOTECLAW_SIDE_EFFECTS_FILE") or "",
            channel=opt("REMOTECLAW_CHANNEL"),
            account_id=opt("REMOTECLAW_ACCOUNT_ID"),
            to=opt("REMOTECLAW_TO"),
            thread_id=opt("REMOTECLAW_THREAD_ID"),
            sender_is_owner=(opt("REMOTECLAW_SENDER_IS_OWNER") or "").lower() == "true",
            tool_profile=profile,
            plugin_tools_file=opt("REMOTECLAW_PLUGIN_TOOLS_FILE"),
            gateway_socket=opt("REMOTECLAW_GATEWAY_SOCKET"),
        )
