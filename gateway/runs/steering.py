"""Which steering mode applies to a message that arrives while its session's turn is running.

A user on a phone often sends a correction or an addition while the agent still works ("also update the
README", "no, use the other table"). Each agent chooses what that message does:

- ``queue``: it waits, collected with any others, for the next turn (what remoteclaw always did);
- ``interrupt``: the running turn is stopped and a new one starts at once with the interrupted messages and
  the new ones folded together, so nothing the user said is lost;
- ``steer``: it goes to the running CLI, where the runtime can take more input mid-turn (``Runtime.steerable``:
  Claude Code, whose ``--input-format stream-json`` keeps stdin open for more user messages, answered in the
  same process and delivered with the turn's reply); on other runtimes ``steer`` behaves as ``queue``.

``agents.list[].steering`` wins; otherwise OpenClaw's ``messages.queue.mode`` applies, its names mapped onto
ours. Plain functions of the config: the run queue asks per message, so a config change applies at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from gateway.config.model import Config

__all__ = ["OPENCLAW_MODES", "Mode", "effective_mode", "mode_for"]

Mode = Literal["queue", "interrupt", "steer"]

OPENCLAW_MODES: dict[str, Mode] = {
    "queue": "queue",
    "collect": "queue",
    "followup": "queue",
    "interrupt": "interrupt",
    "steer": "steer",
    "steer-backlog": "steer",
}
"""``messages.queue.mode`` values (OpenClaw's) and the mode each means here."""


def mode_for(config: Config, agent_id: str) -> Mode:
    """The mode the agent is configured with (its own, else ``messages.queue.mode``)."""
    agent = next((a for a in config.agents.list if a.id == agent_id), None)
    if agent is not None and agent.steering is not None:
        return agent.steering
    return OPENCLAW_MODES.get(config.messages.queue.mode, "queue")


def effective_mode(config: Config, agent_id: str) -> Mode:
    """The mode that actually applies: ``steer`` falls back to ``queue`` on a runtime that cannot steer."""
    mode = mode_for(config, agent_id)
    if mode == "steer":
        agent = next((a for a in config.agents.list if a.id == agent_id), None)
        from gateway.agents.runtimes import get_runtime  # the registry imports every adapter: only when asked

        if agent is None or not get_runtime(agent.runtime).steerable:
            return "queue"
    return mode
