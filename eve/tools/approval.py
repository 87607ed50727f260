"""Approval rules: ``from eve.tools.approval import always, once, never``."""

from eve.authoring.approval import ApprovalRule, Decision, always, never, once

__all__ = ["ApprovalRule", "Decision", "always", "never", "once"]
