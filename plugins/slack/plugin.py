"""The ``slack`` plugin: adds the Slack channel, configured under ``channels.slack``.

The channel type is registered by name (``module:Class``), so slack-sdk is imported only when a Slack account
is configured; without the ``slack`` extra the channel's status names the extra to install.
"""

from __future__ import annotations

from gateway.plugin_host import PluginApi


def register(api: PluginApi) -> None:
    api.channel("slack", "plugins.slack.channel:SlackChannel")
