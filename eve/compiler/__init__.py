"""The compiler: ``agent/`` on disk → artifacts under ``.eve/``."""

from eve.compiler.check import CheckReport, check_artifacts
from eve.compiler.pipeline import CompileResult, compile_agent, compile_to_disk

__all__ = ["CheckReport", "CompileResult", "check_artifacts", "compile_agent", "compile_to_disk"]
