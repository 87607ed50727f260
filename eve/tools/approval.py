"""Approval rules: ``from eve.tools.approval import always, once, never``."""

from eve.authoring.approval import ApprovalRule, always, never, once

__all__ = ["ApprovalRule", "always", "never", "once"]
