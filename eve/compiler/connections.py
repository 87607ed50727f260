"""A ``define_mcp_connection`` as the manifest records it: a declaration, never a connection."""

from __future__ import annotations

from eve.authoring.approval import ApprovalRule
from eve.authoring.connection_auth import IdentityProvider, OAuth
from eve.authoring.connections import EnvValue, MCPConnection
from eve.manifest import (
    Approval,
    ConnectionEntry,
    EnvHeader,
    HttpServer,
    IdentityProviderSettings,
    McpServer,
    OAuthSettings,
    StdioServer,
)


def _approval(rule: ApprovalRule) -> Approval:
    return Approval(kind=rule.kind)


def _env_value(value: EnvValue) -> EnvHeader:
    return EnvHeader(env=value.name, prefix=value.prefix)


def _server(definition: MCPConnection) -> McpServer:
    if definition.command is not None:
        return StdioServer(
            command=list(definition.command),
            env={
                name: _env_value(value) if isinstance(value, EnvValue) else value
                for name, value in sorted(definition.env.items())
            },
            cwd=definition.cwd,
        )
    assert definition.url is not None, "define_mcp_connection refuses neither url nor command"
    return HttpServer(
        url=definition.url,
        headers={name: _env_value(value) for name, value in sorted(definition.headers.items())},
        has_token=definition.get_token is not None,
        oauth=None if definition.auth is None else _oauth(definition.auth),
    )


def _oauth(auth: OAuth) -> OAuthSettings:
    secret = auth.client_secret
    return OAuthSettings(
        scopes=list(auth.scopes) if auth.scopes is not None else None,
        client_id=auth.client_id,
        client_secret=None if secret is None else _env_value(secret),
        redirect_url=auth.redirect_url,
        client_name=auth.client_name,
        client_metadata_url=auth.client_metadata_url,
        authorization_timeout_seconds=auth.authorization_timeout_seconds,
        grant=auth.grant,
        private_key=None if auth.private_key is None else _env_value(auth.private_key),
        private_key_file=auth.private_key_file,
        signing_algorithm=auth.signing_algorithm,
        issuer=auth.issuer,
        identity_provider=None if auth.identity_provider is None else _idp(auth.identity_provider),
    )


def _idp(idp: IdentityProvider) -> IdentityProviderSettings:
    return IdentityProviderSettings(
        token_endpoint=idp.token_endpoint,
        client_id=idp.client_id,
        client_secret=None if idp.client_secret is None else _env_value(idp.client_secret),
        id_token=None if idp.id_token is None else _env_value(idp.id_token),
        id_token_file=idp.id_token_file,
    )


def connection_entry(
    definition: MCPConnection,
    *,
    name: str,
    logical_path: str,
    source_id: str,
    export_name: str,
    factory: bool,
) -> ConnectionEntry:
    """The manifest entry of the connection in ``logical_path``."""
    allowed = definition.tools.allow
    return ConnectionEntry(
        name=name,
        description=definition.description,
        logical_path=logical_path,
        source_id=source_id,
        export_name=export_name,
        factory=factory,
        server=_server(definition),
        allow_tools=sorted(allowed) if allowed is not None else None,
        block_tools=sorted(definition.tools.block),
        approval=_approval(definition.approval),
        approval_by_tool={
            tool: _approval(rule) for tool, rule in sorted(definition.approval_by_tool.items())
        },
        expose=definition.expose,
        connect_timeout_seconds=definition.connect_timeout_seconds,
        call_timeout_seconds=definition.call_timeout_seconds,
        sampling=definition.sampling,
        sampling_max_tokens=definition.sampling_max_tokens,
    )
