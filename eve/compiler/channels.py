"""Channel declarations into manifest entries: options checked, secrets refused, paths owned.

Each check reports a diagnostic naming the channel's file and the line of its constructor
call. A kind's ``Options`` is imported here, at compile time only (``eve compile --check``
compares hashes and imports nothing); a kind that cannot be imported is checked as plain
data and reported, since the server that mounts it will refuse to start
(``ChannelKindUnavailable``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import msgspec

from eve.authoring.channels import ChannelDefinition
from eve.channels.kind_modules import load_kind
from eve.compiler.diagnostics import DiagnosticSink
from eve.errors import ChannelKindUnavailable
from eve.manifest import ROOT_NODE_ID, ChannelEntry, ChannelRouteEntry

#: where a channel's routes live unless its declaration says ``path=``
#: (``eve.channels.declaration.CHANNELS_PREFIX``, which imports the server side)
CHANNELS_PREFIX = "/channels"
#: paths eve's own routes own: the session API (``/eve/v1``) and the dev UI (``/`` and
#: ``/ui/``); tests/channels/test_compile_channels.py checks them against the server's
RESERVED_PREFIXES = ("/eve", "/ui")
#: an option holding one of these is a secret value whatever its name
_SECRET_VALUE = re.compile(
    r"^(xox[abposr]-|xapp-|sk-|sk_live_|rk_live_|ghp_|gho_|github_pat_|AKIA|Bearer\s)"
)
#: option names that say "secret" (their ``*_env`` forms name a variable instead)
_SECRET_NAME = re.compile(r"secret|token|password|passwd|api_?key|credential|private_?key")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True, kw_only=True)
class ChannelSource:
    """Where a channel was declared: the file, and what the export rule found in it."""

    name: str
    logical_path: str
    source_id: str
    export_name: str
    factory: bool


def _where(path: str, line: int | None) -> dict[str, str | int | None]:
    """Where a diagnostic about a channel points: its file and its constructor's line."""
    return {"source_path": path, "line": line, "node_id": ROOT_NODE_ID}


def url_path(name: str, definition: ChannelDefinition) -> str:
    return definition.path or f"{CHANNELS_PREFIX}/{name}"


def channel_entry(
    definition: ChannelDefinition, source: ChannelSource, sink: DiagnosticSink
) -> ChannelEntry | None:
    """The manifest entry of one channel, or None (with diagnostics) when it cannot be."""
    where = _where(source.logical_path, definition.line)
    problems = list(_option_problems(definition.options))
    for code, message in problems:
        sink.error(code, message, **where)
    if problems:
        return None
    checked = _checked_against_kind(definition, source, sink)
    if not checked:
        return None
    path = url_path(source.name, definition)
    routes = [ChannelRouteEntry(method=r.method, url_path=path + r.path) for r in definition.routes]
    return ChannelEntry(
        name=source.name,
        kind=definition.kind,
        url_path=path,
        routes=routes or [ChannelRouteEntry(method="POST", url_path=path)],
        logical_path=source.logical_path,
        source_id=source.source_id,
        export_name=source.export_name,
        factory=source.factory,
        options=definition.options,
        has_handler=definition.handler is not None,
    )


def _checked_against_kind(
    definition: ChannelDefinition, source: ChannelSource, sink: DiagnosticSink
) -> bool:
    where = _where(source.logical_path, definition.line)
    try:
        kind = load_kind(definition.kind)
    except ChannelKindUnavailable as unavailable:
        sink.warning(
            "compile/channel-kind-unavailable",
            f"{unavailable}. Its options were checked as data only, and "
            "a server refuses to start until the kind can be loaded",
            **where,
        )
        return True
    try:
        msgspec.convert(definition.options, kind.Options)
    except msgspec.ValidationError as error:
        sink.error(
            "compile/channel-options-invalid",
            f"the options of this {definition.kind} channel are not "
            f"valid: {error} (see docs/channels/{definition.kind}.md)",
            **where,
        )
        return False
    return True


def _option_problems(options: dict[str, Any]) -> Iterator[tuple[str, str]]:
    try:
        msgspec.json.encode(options)
    except (TypeError, msgspec.EncodeError) as error:
        yield (
            "compile/channel-options-invalid",
            f"the options must be plain data (text, numbers, lists, dicts): {error}",
        )
        return
    for key, value in _leaves(options, "$"):
        name = key.rsplit(".", 1)[-1].lower()
        if name.endswith("_env"):
            if not (isinstance(value, str) and _ENV_NAME.match(value)):
                yield (
                    "compile/channel-option-not-env-name",
                    f"option {key} names the environment variable that holds a secret, and "
                    "its value is not a variable name (e.g. 'SLACK_SIGNING_SECRET'); never "
                    "put the secret itself here",
                )
        elif isinstance(value, str) and _looks_secret(name, value):
            yield (
                "compile/channel-secret-literal",
                f"option {key} holds what looks like a secret; a channel's options are "
                "written into .eve/ and shown by eve info, so name the environment "
                f"variable that holds it instead ({name}_env='MY_VARIABLE')",
            )


def _looks_secret(name: str, value: str) -> bool:
    if _SECRET_VALUE.match(value):
        return True
    # an upper-case variable name under a secret-sounding option is a mistake of form, not
    # a leak: the kind's Options check names the right option
    return bool(_SECRET_NAME.search(name)) and len(value) >= 8 and not value.isupper()


def _leaves(value: Any, key: str) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for name, inner in value.items():
            yield from _leaves(inner, f"{key}.{name}")
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _leaves(inner, f"{key}[{index}]")
    else:
        yield key, value


def _owns(path: str, other: str) -> bool:
    return other == path or other.startswith(path + "/")


def check_paths(
    entries: list[ChannelEntry], lines: dict[str, int | None], sink: DiagnosticSink
) -> None:
    """A channel owns its path and every path below it: one under eve's own routes, or
    where another channel's are, is refused (the later file is the one reported)."""
    for index, entry in enumerate(entries):
        where = _where(entry.logical_path, lines.get(entry.name))
        reserved = [p for p in RESERVED_PREFIXES if _owns(p, entry.url_path)]
        if reserved:
            sink.error(
                "compile/channel-path-reserved",
                f"channel '{entry.name}' at {entry.url_path} lies under {reserved[0]}/, where "
                "eve's own routes are (the session API, the dev UI); give it another path= "
                f"(the default is {CHANNELS_PREFIX}/{entry.name})",
                **where,
            )
        for earlier in entries[:index]:
            if _owns(earlier.url_path, entry.url_path) or _owns(entry.url_path, earlier.url_path):
                sink.error(
                    "compile/channel-path-collision",
                    f"channel '{entry.name}' at {entry.url_path} and channel '{earlier.name}' "
                    f"({earlier.logical_path}) at {earlier.url_path} overlap: a channel owns "
                    "every path below its own, so give one of them another path=",
                    **where,
                )
