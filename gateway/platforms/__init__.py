"""The gateway's public surface for chat platforms (``channels/``, and plugins that add a channel).

A platform package imports from here (and ``gateway.protocol`` for the error types), never from the
gateway's deeper modules: the messages both sides share, the ``ChatPlatforms`` interface it implements,
the ``PlatformHost`` it is given at start, the config model (and that of channel access rules), and the chat
commands the gateway answers (``chat_commands``, the registry: for platforms that list them in a menu).
"""

from __future__ import annotations

from gateway.config import ChannelAccessConfig, Config
from gateway.dispatch.commands import CommandSpec
from gateway.dispatch.commands import commands as chat_commands
from gateway.netguard import is_public_address
from gateway.paths import OUTBOUND
from gateway.platforms.door import channel_section
from gateway.platforms.history import MessageLog
from gateway.platforms.host import PlatformHost
from gateway.platforms.interface import MAX_ATTACHMENT_BYTES, ChatPlatforms, ProgressSink
from gateway.platforms.journal import InboundJournal
from gateway.platforms.messages import ChatType, Inbound, InboundHandler, Media, MediaKind, Sent
from gateway.runs import Origin
from gateway.sandbox.open_beneath import FileBytes, read_fd
from gateway.webchat.posts import WebchatPosts

__all__ = [
    "MAX_ATTACHMENT_BYTES",
    "OUTBOUND",
    "ChannelAccessConfig",
    "ChatPlatforms",
    "ChatType",
    "CommandSpec",
    "Config",
    "FileBytes",
    "Inbound",
    "InboundHandler",
    "InboundJournal",
    "Media",
    "MediaKind",
    "MessageLog",
    "Origin",
    "PlatformHost",
    "ProgressSink",
    "Sent",
    "WebchatPosts",
    "channel_section",
    "chat_commands",
    "is_public_address",
    "read_fd",
]
