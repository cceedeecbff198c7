"""``remoteclaw doctor``'s lines about agents placed on nodes (from the config; ``remoteclaw nodes agents`` asks the
running gateway whether a turn can be placed now)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.config import Config

__all__ = ["rows"]


def rows(config: Config) -> list[tuple[str, str, str, str]]:
    out = []
    for agent in config.agents.list:
        if agent.node is None:
            continue
        where = agent.workspace or (f"its projects {', '.join(p.name for p in agent.projects)} or a private folder "
                                    "per session" if agent.projects else "a private folder per session")
        out.append((f"agent {agent.id}", "ok", f"turns run on node {agent.node} ({agent.runtime}, in {where})",
                    "remoteclaw nodes agents: whether a turn can be placed there now, and why not"))
    return out
