"""Import a channel kind's module, or say precisely why it cannot be (and what to install).

The compiler imports a kind to check a channel's options against its ``Options``; a server
imports it to mount the channel's routes. Both go through ``load_kind`` so that a kind
whose protocol package is missing is one ``ChannelKindUnavailable`` naming the extra.
"""

from __future__ import annotations

import importlib
import re
from importlib import metadata
from types import ModuleType

from eve.channels.kinds import KIND_MODULES
from eve.errors import ChannelKindUnavailable

#: the distribution whose extras install the kinds' protocol packages
DISTRIBUTION = "eve-durable"
_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_EXTRA_MARKER = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def extra_for(kind: str, missing: str) -> str | None:
    """The extra of eve whose requirements provide the module ``missing`` (``slack_sdk`` →
    the extra requiring ``slack-sdk``), the one named like ``kind`` first; None if none."""
    try:
        requirements = metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        return None
    wanted = _normalized(missing.split(".", maxsplit=1)[0])
    extras: list[str] = []
    for requirement in requirements:
        name, marker = _REQUIREMENT_NAME.match(requirement), _EXTRA_MARKER.search(requirement)
        if name and marker and _normalized(name.group(1)).startswith(wanted):
            extras.append(marker.group(1))
    candidates = [e for e in extras if e not in ("dev", "bench")]
    if kind in candidates:
        return kind
    return candidates[0] if candidates else None


def load_kind(kind: str) -> ModuleType:
    """The module of ``kind`` (``Options`` and ``routes``).

    Raises ``ChannelKindUnavailable`` for a kind eve does not know, a kind module missing
    from this eve, or a protocol package the module imports that is not installed.
    """
    module_name = KIND_MODULES.get(kind)
    if module_name is None:
        known = ", ".join(sorted(KIND_MODULES))
        raise ChannelKindUnavailable(
            f"channel kind {kind!r} is not one eve has (known: {known})",
            kind=kind,
            missing=kind,
            extra=None,
        )
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        missing = error.name or module_name
        if missing == module_name or module_name.startswith(missing + "."):
            raise ChannelKindUnavailable(
                f"channel kind {kind!r} is not part of this version of eve ({module_name} "
                "is missing): upgrade eve, or remove the channel from agent/channels/",
                kind=kind,
                missing=module_name,
                extra=None,
            ) from error
        extra = extra_for(kind, missing)
        fix = (
            f"pip install '{DISTRIBUTION}[{extra}]'"
            if extra
            else f"install the package that provides {missing!r}"
        )
        raise ChannelKindUnavailable(
            f"channel kind {kind!r} needs the package {missing!r}, which is not installed: {fix}",
            kind=kind,
            missing=missing,
            extra=extra,
        ) from error
