"""The shop as an A2A agent other agents call: its card at
/channels/agents/.well-known/agent-card.json, JSON-RPC at /channels/agents."""

from eve.channels import a2a

default = a2a()
