"""An agent's Agent Card (A2A ``AgentCard``), built from its config each time it is asked for.

Name and version come from the agent and the gateway; the description and skills from ``a2a.cards.<agentId>``
when given, else from the agent's config (one general skill naming its runtime and model, one per project it may
work in). The one interface is JSON-RPC at ``/a2a/<agentId>`` (protocol 1.0), streaming on; the one security
scheme is a bearer token (the gateway token, a person's sign-in, or a ``/mcp`` token made for a peer), required
for every call. Nothing on a card is secret: a card is public, as A2A expects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import PROTOCOL_VERSION_CURRENT, TransportProtocol

if TYPE_CHECKING:
    from gateway.a2a.config import A2aConfig
    from gateway.config import AgentConfig

__all__ = ["A2A_PREFIX", "BEARER", "agent_card", "agent_url"]

A2A_PREFIX = "/a2a"
BEARER = "bearer"
"""The security scheme's name on every card."""
MODES = ["text/plain", "application/json"]


def agent_url(base: str, agent_id: str) -> str:
    """Where an agent's JSON-RPC interface is."""
    return f"{base.rstrip('/')}{A2A_PREFIX}/{agent_id}"


def _skills(agent: AgentConfig, a2a: A2aConfig) -> list[AgentSkill]:
    card = a2a.cards.get(agent.id)
    if card is not None and card.skills:
        return [AgentSkill(id=s.id, name=s.name, description=s.description or s.name, tags=s.tags or ["chat"],
                           examples=s.examples) for s in card.skills]
    who = f"{agent.runtime}" + (f" ({agent.model})" if agent.model else "")
    skills = [AgentSkill(id="chat", name=agent.name or agent.id,
                         description=f"A coding agent ({who}): answers, plans and does work in a conversation "
                                     "that keeps its context per contextId.",
                         tags=["chat", "coding", agent.runtime])]
    for project in agent.projects:
        skills.append(AgentSkill(id=f"project-{project.name}", name=f"Project {project.name}",
                                 description=f"Work in the project {project.name} (ask for /project {project.name} "
                                             "from the owner's chat first; A2A text cannot run commands).",
                                 tags=["project", project.name]))
    return skills


def agent_card(agent: AgentConfig, a2a: A2aConfig, base: str, version: str) -> AgentCard:
    """The card of ``agent`` as served at ``base`` (the gateway's public URL or the request's origin)."""
    card = a2a.cards.get(agent.id)
    description = (card.description if card is not None and card.description else
                   f"{agent.name or agent.id}: a remoteclaw agent ({agent.runtime}) reached over A2A.")
    bearer = SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(
        scheme="Bearer", description="The gateway token, a person's sign-in, or a token made for this peer "
                                     "(remoteclaw mcp token create --person <peer>)."))
    return AgentCard(
        name=agent.name or agent.id,
        description=description,
        version=version,
        provider=AgentProvider(organization="remoteclaw", url=base.rstrip("/")),
        supported_interfaces=[AgentInterface(url=agent_url(base, agent.id),
                                             protocol_binding=TransportProtocol.JSONRPC.value,
                                             protocol_version=PROTOCOL_VERSION_CURRENT)],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False, extended_agent_card=False),
        security_schemes={BEARER: bearer},
        security_requirements=[SecurityRequirement(schemes={BEARER: StringList(list=[])})],
        default_input_modes=MODES,
        default_output_modes=MODES,
        skills=_skills(agent, a2a),
    )
