"""The compiler: ``agent/`` on disk → artifacts under ``.eve/``.

::

    from eve.compiler import compile_to_disk

    result = compile_to_disk("path/to/app")   # raises CompileFailed with the diagnostics

Names load on first use (``eve._lazy``), so importing a light submodule such as
``eve.compiler.diagnostics`` does not load the pipeline (and pydantic, jsonschema and the
authoring API behind it). Whether the artifacts are fresh is not the compiler's question:
``eve.artifacts.check_artifacts`` answers it without importing any of this.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eve._lazy import lazy_attributes

if TYPE_CHECKING:
    from eve.compiler.pipeline import CompileResult, compile_agent, compile_to_disk

__all__ = ["CompileResult", "compile_agent", "compile_to_disk"]

_LAZY = {
    "CompileResult": "eve.compiler.pipeline",
    "compile_agent": "eve.compiler.pipeline",
    "compile_to_disk": "eve.compiler.pipeline",
}

__getattr__ = lazy_attributes(__name__, _LAZY)
