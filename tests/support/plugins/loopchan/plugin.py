"""A test plugin that adds a chat channel: the loopback test channel under the name ``pluginloop``."""

from typing import Any

from tests.support.loop_channel import LoopChannel


class PluginLoopChannel(LoopChannel):
    name = "pluginloop"


def register(api: Any) -> None:
    api.channel("pluginloop", PluginLoopChannel)
