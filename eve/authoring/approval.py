"""Approval rules for tools: ``always()``, ``once()``, ``never()`` or a policy function."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from eve.errors import AuthoringError

Decision = Literal["approved", "denied", "needs-user-approval"]
ApprovalPolicy = Callable[[Any], Decision | bool]


@dataclass(frozen=True, kw_only=True)
class ApprovalRule:
    """How a tool's calls are gated; ``policy`` decides per input when ``kind`` is policy."""

    kind: Literal["never", "always", "once", "policy"]
    policy: ApprovalPolicy | None = None
    #: who may answer besides the principal whose message asked and operators
    #: (``role:<name>``), or None
    by: str | None = None


NEVER = ApprovalRule(kind="never")

#: ``role:`` and a role name: letters, digits and ``_ - . : /``
_BY = re.compile(r"role:([A-Za-z0-9_.:/-]{1,100})")


def role_of(by: str) -> str | None:
    """The role ``by`` names (``role:finance`` → ``finance``), or None if it names none."""
    match = _BY.fullmatch(by)
    return None if match is None else match.group(1)


def _checked_by(by: str | None) -> str | None:
    if by is None or role_of(by) is not None:
        return by
    raise AuthoringError(
        f"by={by!r} names no role: write by='role:<name>' (letters, digits, _ - . : /), "
        "e.g. always(by='role:finance'); the principal whose message asked and operators "
        "may always answer"
    )


def always(*, by: str | None = None) -> ApprovalRule:
    """Ask a person before every call; ``by='role:<name>'`` lets that role's holders answer
    too (besides the principal whose message asked, and operators)."""
    return ApprovalRule(kind="always", by=_checked_by(by))


def once(*, by: str | None = None) -> ApprovalRule:
    """Ask until a call is approved once in the session, then stop asking; ``by`` as for
    ``always``."""
    return ApprovalRule(kind="once", by=_checked_by(by))


def never() -> ApprovalRule:
    """Never ask (the default)."""
    return NEVER


def normalize_approval(value: ApprovalRule | ApprovalPolicy | None) -> ApprovalRule:
    """Turn what an author passed as ``approval=`` into one rule."""
    if value is None:
        return never()
    if isinstance(value, ApprovalRule):
        return value
    if callable(value):
        return ApprovalRule(kind="policy", policy=value)
    raise AuthoringError(
        f"approval= takes always(), once(), never() or a function of the input, "
        f"not {type(value).__name__}"
    )
