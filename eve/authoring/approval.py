"""Approval rules for tools: ``always()``, ``once()``, ``never()`` or a policy function."""

from __future__ import annotations

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


NEVER = ApprovalRule(kind="never")


def always() -> ApprovalRule:
    """Ask a person before every call."""
    return ApprovalRule(kind="always")


def once() -> ApprovalRule:
    """Ask until a call is approved once in the session, then stop asking."""
    return ApprovalRule(kind="once")


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
