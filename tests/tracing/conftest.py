"""A real SDK tracer provider per tracing test, with an in-memory exporter.

The API lets a process set its global provider once; a test sets its own and puts the
process back as it found it, as OpenTelemetry's own test utilities do
(``opentelemetry.test.globals_test.reset_trace_globals``), so other tests record nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util._once import Once


def reset_global_provider() -> None:
    """No global provider, and one may be set again (OpenTelemetry's private globals)."""
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The exporter of the spans this test's turns end (a global provider for the test)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    reset_global_provider()
    trace.set_tracer_provider(provider)
    try:
        yield exporter
    finally:
        provider.shutdown()
        reset_global_provider()


def by_name(finished: Sequence[ReadableSpan]) -> dict[str, list[ReadableSpan]]:
    found: dict[str, list[ReadableSpan]] = {}
    for span in finished:
        found.setdefault(span.name, []).append(span)
    return found
