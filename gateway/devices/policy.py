"""Which commands the gateway lets callers invoke on a node: platform defaults, widened by
``nodes.allowCommands`` and narrowed by ``nodes.denyCommands`` (deny wins).

A command must also be declared by the node itself: the gateway never sends a node a command it did
not offer. The defaults follow what each kind of machine can do safely; anything that records the
user (camera, screen recording, microphone) or reaches their data (contacts, SMS) is off until the
owner allows it by name.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

__all__ = ["AGENT_COMMANDS", "PLATFORM_DEFAULTS", "allowed", "platform_family"]

_SYSTEM = ("system.run", "system.run.prepare", "system.which", "system.notify", "system.execApprovals.get",
           "system.execApprovals.set")
_CANVAS = ("canvas.present", "canvas.hide", "canvas.navigate", "canvas.eval", "canvas.snapshot",
           "canvas.a2ui.push", "canvas.a2ui.pushJSONL", "canvas.a2ui.reset")
_BROWSER = ("browser.proxy",)
_CUA = ("desktop.*",)
"""Cua Driver's tools on a desktop node (``gateway/desktop``): offered only when the node's owner installed the
``desktop`` part and runs the node in a graphical session; agent runs reach them through ``desktop.invoke``."""
AGENT_COMMANDS = ("agent.describe", "agent.project", "agent.run", "agent.file", "agent.input")
"""Agent turns on a node that lends its CLIs (``gateway.agent_hosts``): sent by the executor for an agent placed
there (``agents.list[].node``), never through ``node.invoke``; ``agent.file`` is a file such a turn's agent sends
(read in its folder there), ``agent.input`` a running turn's stdin."""
_DESKTOP = (*_SYSTEM, *_CANVAS, *_BROWSER, *_CUA, *AGENT_COMMANDS, "screen.snapshot")
_OPT_IN = ("desktop.stream",)
"""Matched by a default pattern but recording the user all the same (OpenClaw's node streams the screen with
it): only ``nodes.allowCommands`` allows these."""
_MOBILE = ("system.notify", "location.get", "camera.list", "device.info", "device.status", *_CANVAS)

PLATFORM_DEFAULTS: dict[str, tuple[str, ...]] = {
    "linux": _DESKTOP,
    "macos": _DESKTOP,
    "windows": _DESKTOP,
    "ios": _MOBILE,
    "android": _MOBILE,
    "unknown": ("system.notify", *_CANVAS),
}

_FAMILIES = (("ios", ("iphone", "ipad", "ios")), ("android", ("android",)), ("macos", ("darwin", "mac")),
             ("windows", ("win",)), ("linux", ("linux",)))


def platform_family(platform: str, device_family: str = "") -> str:
    """The defaults' key for a node's reported platform (``linux``, ``darwin``, ``win32``, ``iOS 18``...)."""
    text = f"{platform} {device_family}".strip().lower()
    for family, tokens in _FAMILIES:
        if any(token in text for token in tokens):
            return family
    return "unknown"


def allowed(command: str, platform: str, *, allow: list[str], deny: list[str]) -> bool:
    """Whether the gateway's policy lets ``command`` be invoked on a node of ``platform``."""
    if any(fnmatchcase(command, pattern) for pattern in deny):
        return False
    if command not in _OPT_IN and any(fnmatchcase(command, pattern)
                                      for pattern in PLATFORM_DEFAULTS[platform_family(platform)]):
        return True
    return any(fnmatchcase(command, pattern) for pattern in allow)
