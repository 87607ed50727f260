"""OpenTelemetry traces of turns, model calls and tool calls (docs/tracing.md).

The only package that imports ``opentelemetry``; the SDK only in ``eve.tracing.provider``,
which the CLI calls. The loop reaches it at two seams: every emitted event goes to
``observe`` (``invoke_agent`` and ``execute_tool`` spans) and every model request it makes
runs inside a ``ModelCallSpan`` (``chat`` spans).
"""

from eve.tracing.model_calls import ModelCallSpan
from eve.tracing.turn_spans import observe

__all__ = ["ModelCallSpan", "observe"]
