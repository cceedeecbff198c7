"""Slack: an app through slack-sdk (extra ``slack``), over Socket Mode or the Events API."""

from __future__ import annotations

from channels.kind import ChannelKind

__all__ = ["KIND"]

KIND = ChannelKind("slack", "channels.slack.channel:SlackChannel")
