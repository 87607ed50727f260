"""The shop behind a chat UI made with the Vercel AI SDK (`useChat`): POST /channels/chat."""

from eve.channels import ai_sdk

default = ai_sdk()
