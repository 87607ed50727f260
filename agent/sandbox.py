"""Where the shop assistant's commands run: a bubblewrap sandbox, no network."""

from eve.sandbox import SandboxLimits, define_sandbox

default = define_sandbox(limits=SandboxLimits(cpu_seconds=30, workspace_mb=64))
