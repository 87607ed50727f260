"""OpenTelemetry traces of turns, model calls and tool calls (docs/tracing.md).

The only package that imports ``opentelemetry``; the SDK only in ``eve.tracing.provider``,
which the CLI calls. The loop reaches it at two seams: every emitted event goes to
``observe`` (``invoke_agent`` spans, and ``execute_tool`` spans of calls that run as
tasks), every model request it makes runs inside a ``ModelCallSpan`` (``chat`` spans) and
every function tool it runs inside a ``ToolCallSpan`` (``execute_tool`` spans).

Internal: turned on from the environment (``OTEL_*``), never imported by an agent
(docs/architecture.md, "The public surface").
"""

from eve.tracing.model_calls import ModelCallSpan
from eve.tracing.tool_calls import ToolCallSpan
from eve.tracing.turn_spans import observe

__all__ = ["ModelCallSpan", "ToolCallSpan", "observe"]
