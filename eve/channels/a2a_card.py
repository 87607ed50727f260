"""The agent card of an A2A channel: what the agent is, where to call it and how to sign in."""

from __future__ import annotations

from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import PROTOCOL_VERSION_CURRENT, TransportProtocol

from eve._attachments import DOCUMENT_TYPES, IMAGE_TYPES
from eve.execution.setup import AgentSetup

#: the scheme's name in ``securitySchemes``
BEARER = "bearer"
#: text, data (as its JSON text) and the files a model takes (``eve._attachments``)
INPUT_MODES = list(dict.fromkeys(["text/plain", "application/json", *IMAGE_TYPES, *DOCUMENT_TYPES]))
#: text as each step's artifact and status messages; a typed answer as JSON data
OUTPUT_MODES = ["text/plain", "application/json"]


def agent_card(
    setup: AgentSetup, *, name: str, description: str | None, version: str, url: str, bearer: bool
) -> AgentCard:
    """The card of the agent ``setup`` runs, served at ``url`` (its JSON-RPC endpoint);
    ``bearer``: the server refuses a request without a bearer token."""
    config = setup.agent.config
    about = description or config.description or f"{name}: an agent served by eve"
    card = AgentCard(
        name=name,
        description=about,
        version=version,
        supported_interfaces=[
            AgentInterface(
                url=url,
                protocol_binding=TransportProtocol.JSONRPC.value,
                protocol_version=PROTOCOL_VERSION_CURRENT,
            )
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=INPUT_MODES,
        default_output_modes=OUTPUT_MODES,
        skills=_skills(setup, name=name, description=about),
    )
    if bearer:
        card.security_schemes[BEARER].CopyFrom(
            SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="Bearer",
                    description="the eve server's token (EVE_API_TOKEN) or a token it verifies",
                )
            )
        )
        card.security_requirements.append(SecurityRequirement(schemes={BEARER: StringList()}))
    return card


def _skills(setup: AgentSetup, *, name: str, description: str) -> list[AgentSkill]:
    """The agent's skills (``agent/skills/*.md``); an agent without any offers one: itself."""
    skills = [
        AgentSkill(id=s.name, name=s.name, description=s.entry.description, tags=["skill"])
        for s in setup.agent.skills
    ]
    return skills or [AgentSkill(id="chat", name=name, description=description, tags=["chat"])]
