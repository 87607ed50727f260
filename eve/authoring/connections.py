"""``define_mcp_connection``: one MCP server an agent reaches, declared in ``connections/``.

A declaration is data: compiling reads it (nothing connects, no process starts) and the
runtime's connection pool (``eve.connections``) connects when a session first needs the
server's tools. Secrets never sit in the declaration: header values name environment
variables (``from_env``) read when connecting, or come from a ``get_token`` callable.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from eve.authoring._caller import caller_module
from eve.authoring.approval import NEVER, ApprovalPolicy, ApprovalRule, normalize_approval
from eve.authoring.connection_auth import OAuth
from eve.authoring.env_values import ENV_NAME, EnvValue, from_env
from eve.errors import AuthoringError

__all__ = ["EnvValue", "MCPConnection", "ToolFilter", "define_mcp_connection", "from_env"]

Expose = Literal["catalog", "tools"]
#: whether a server may use the agent's model (``sampling/createMessage``)
Sampling = Literal["never", "ask", "always"]
#: a bearer token for the server, asked for at each connect (sync or async)
TokenSource = Callable[[], str | Awaitable[str]]
_HEADER_NAME = re.compile(r"^[A-Za-z0-9-]+$")


@dataclass(frozen=True, kw_only=True)
class ToolFilter:
    """Which of the server's tools the agent gets: ``allow`` (None: all) minus ``block``."""

    allow: tuple[str, ...] | None = None
    block: tuple[str, ...] = ()

    def admits(self, tool: str) -> bool:
        return (self.allow is None or tool in self.allow) and tool not in self.block


@dataclass(frozen=True, kw_only=True)
class MCPConnection:
    """One MCP server, reached over Streamable HTTP (``url``) or stdio (``command``)."""

    description: str
    url: str | None = None
    command: tuple[str, ...] | None = None
    env: Mapping[str, str | EnvValue] = field(default_factory=dict)
    cwd: str | None = None
    headers: Mapping[str, EnvValue] = field(default_factory=dict)
    get_token: TokenSource | None = None
    #: OAuth 2.1 sign-in (``oauth(...)``), for a Streamable HTTP server
    auth: OAuth | None = None
    tools: ToolFilter = ToolFilter()
    #: the rule for every tool, and rules by the server's tool name that replace it
    approval: ApprovalRule = NEVER
    approval_by_tool: Mapping[str, ApprovalRule] = field(default_factory=dict)
    expose: Expose = "catalog"
    connect_timeout_seconds: float = 10.0
    call_timeout_seconds: float = 30.0
    #: whether the server may use the agent's model (``sampling/createMessage``), and the
    #: most tokens one answer may use
    sampling: Sampling = "never"
    sampling_max_tokens: int = 1024
    defined_in: str | None = None

    def approval_for(self, tool: str) -> ApprovalRule:
        """The approval rule of the server's tool ``tool``."""
        return self.approval_by_tool.get(tool, self.approval)


_KEYS = (
    "description",
    "url",
    "command",
    "env",
    "cwd",
    "headers",
    "get_token",
    "auth",
    "tools",
    "block_tools",
    "approval",
    "expose",
    "connect_timeout_seconds",
    "call_timeout_seconds",
    "sampling",
    "sampling_max_tokens",
)


def define_mcp_connection(
    *,
    description: str,
    url: str | None = None,
    command: Sequence[str] | None = None,
    env: Mapping[str, str | EnvValue] | None = None,
    cwd: str | None = None,
    headers: Mapping[str, EnvValue] | None = None,
    get_token: TokenSource | None = None,
    auth: OAuth | None = None,
    tools: Sequence[str] | None = None,
    block_tools: Sequence[str] = (),
    approval: ApprovalRule
    | ApprovalPolicy
    | Mapping[str, ApprovalRule | ApprovalPolicy]
    | None = None,
    expose: Expose = "catalog",
    connect_timeout_seconds: float = 10.0,
    call_timeout_seconds: float = 30.0,
    sampling: Sampling = "never",
    sampling_max_tokens: int = 1024,
    **unknown: object,
) -> MCPConnection:
    """Declare the MCP server of this file (``connections/<name>.py``; the file name is the
    connection's name, and its tools reach the model as ``<name>__<tool>``).

    Give either ``url`` (Streamable HTTP) or ``command`` (stdio, started with ``env`` and
    ``cwd``). ``tools`` allows only the named server tools, ``block_tools`` removes some.
    ``approval`` is one rule for every tool or a dict of rules by the server's tool name
    (``"*"`` for the rest). ``headers`` values come from ``from_env(...)``; ``get_token``
    returns a bearer token sent as ``Authorization``; ``auth=oauth(...)`` signs in with
    OAuth 2.1 instead (discovery, registration, PKCE, refresh: ``eve.connections.oauth_client``).
    ``expose="catalog"`` (the default) reaches the tools through ``eve__search`` and
    ``eve__tool``; ``"tools"`` lists them in every request. ``sampling`` lets the server ask
    the agent's model for an answer: ``"never"`` (the default: eve does not offer it),
    ``"ask"`` (a person allows each request) or ``"always"``; each answer uses at most
    ``sampling_max_tokens`` tokens, and they count in the turn's usage.
    """
    if unknown:
        raise AuthoringError(_unknown_keys(sorted(unknown)))
    if (url is None) == (command is None):
        raise AuthoringError(
            "define_mcp_connection takes either url= (Streamable HTTP) or command=[...] "
            "(a stdio server), " + ("not both" if url is not None else "and got neither")
        )
    if not description.strip():
        raise AuthoringError("define_mcp_connection needs a description: the model reads it")
    if command is not None and (isinstance(command, str) or not command):
        raise AuthoringError("command= is a non-empty list of strings: ['python', 'server.py']")
    if url is not None and not url.startswith(("http://", "https://")):
        raise AuthoringError(f"url= must be an http(s) URL, not {url!r}")
    if (env or cwd) and command is None:
        raise AuthoringError("env= and cwd= apply to a stdio server (command=), not to url=")
    _check_auth(auth, url=url, get_token=get_token)
    if expose not in ("catalog", "tools"):
        raise AuthoringError(f"expose= is 'catalog' or 'tools', not {expose!r}")
    for seconds, name in (
        (connect_timeout_seconds, "connect_timeout_seconds"),
        (call_timeout_seconds, "call_timeout_seconds"),
    ):
        if not seconds > 0:
            raise AuthoringError(f"{name} must be positive, not {seconds!r}")
    if sampling not in ("never", "ask", "always"):
        raise AuthoringError(f"sampling= is 'never', 'ask' or 'always', not {sampling!r}")
    if isinstance(sampling_max_tokens, bool) or not (
        isinstance(sampling_max_tokens, int) and sampling_max_tokens > 0
    ):
        raise AuthoringError(
            f"sampling_max_tokens must be a positive integer, not {sampling_max_tokens!r}"
        )
    rule, by_tool = _approval(approval)
    return MCPConnection(
        description=description.strip(),
        url=url,
        command=tuple(command) if command is not None else None,
        env=_checked_env(env or {}),
        cwd=cwd,
        headers=_checked_headers(headers or {}),
        get_token=get_token,
        auth=auth,
        tools=ToolFilter(
            allow=tuple(tools) if tools is not None else None, block=tuple(block_tools)
        ),
        approval=rule,
        approval_by_tool=by_tool,
        expose=expose,
        connect_timeout_seconds=float(connect_timeout_seconds),
        call_timeout_seconds=float(call_timeout_seconds),
        sampling=sampling,
        sampling_max_tokens=sampling_max_tokens,
        defined_in=caller_module(),
    )


def _check_auth(auth: object, *, url: str | None, get_token: TokenSource | None) -> None:
    if auth is None:
        return
    if not isinstance(auth, OAuth):
        raise AuthoringError("auth= takes oauth(...) from eve.connections")
    if url is None:
        raise AuthoringError("auth=oauth(...) applies to a Streamable HTTP server (url=)")
    if get_token is not None:
        raise AuthoringError(
            "define_mcp_connection takes get_token= or auth=oauth(...), not both: both would "
            "send Authorization"
        )


def _unknown_keys(keys: list[str]) -> str:
    hints = []
    for key in keys:
        close = difflib.get_close_matches(key, _KEYS, n=1)
        hints.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return f"define_mcp_connection got unknown key(s) {', '.join(hints)}; it takes " + ", ".join(
        _KEYS
    )


def _approval(
    value: ApprovalRule | ApprovalPolicy | Mapping[str, ApprovalRule | ApprovalPolicy] | None,
) -> tuple[ApprovalRule, dict[str, ApprovalRule]]:
    if not isinstance(value, Mapping):
        return normalize_approval(value), {}
    rules = {name: normalize_approval(rule) for name, rule in value.items()}
    return rules.pop("*", NEVER), rules


def _checked_headers(headers: Mapping[str, EnvValue]) -> dict[str, EnvValue]:
    for name, value in headers.items():
        if not _HEADER_NAME.match(name):
            raise AuthoringError(f"headers: {name!r} is not an HTTP header name")
        if not isinstance(value, EnvValue):
            raise AuthoringError(
                f"headers[{name!r}] must come from from_env('VARIABLE') (or use get_token=): "
                "a literal value would be written into .eve/ and the repository"
            )
    return dict(headers)


def _checked_env(env: Mapping[str, str | EnvValue]) -> dict[str, str | EnvValue]:
    for name, value in env.items():
        if not ENV_NAME.match(name):
            raise AuthoringError(f"env: {name!r} is not an environment variable name")
        if not isinstance(value, str | EnvValue):
            raise AuthoringError(f"env[{name!r}] is a string or from_env('VARIABLE')")
    return dict(env)
