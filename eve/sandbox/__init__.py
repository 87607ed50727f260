"""Where an agent's commands run: ``define_sandbox`` for authors, and the providers behind it.

``agent/sandbox.py`` declares the sandbox; ``agent/sandbox/workspace/**`` seeds every
session's workspace. The built-in ``bash`` and ``run_python`` and a tool's
``ctx.sandbox.run([...])`` run through its provider: ``bubblewrap`` (namespaces and
rlimits; ``eve.sandbox.bubblewrap``) or ``local`` (unconfined). See docs/sandbox.md.
"""

from __future__ import annotations

from eve.authoring.sandbox import SandboxDefinition, SandboxLimits, define_sandbox
from eve.sandbox.process import CommandResult
from eve.sandbox.provider import Sandbox

__all__ = ["CommandResult", "Sandbox", "SandboxDefinition", "SandboxLimits", "define_sandbox"]
