"""The tracer eve's spans come from, and the two things every span kind does alike.

eve never sets a tracer provider here: spans go to the global one, which the host
application set, or ``eve serve`` / ``dev`` / ``run`` when ``OTEL_*`` asks
(``eve.tracing.provider``). Until one is set, the API's no-op tracer hands out spans that
record nothing, and eve skips building their attributes.
"""

from __future__ import annotations

import re
from datetime import datetime
from types import TracebackType
from typing import Self

from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode, Tracer

from eve._redact import redact
from eve.tracing.conventions import ERROR_TYPE, EXCEPTION_STACKTRACE

_tracer: tuple[trace.TracerProvider, Tracer] | None = None


def tracing() -> bool:
    """Whether a tracer provider is set at all: without one every span is the API's no-op
    span, and the seams skip even starting it (they sit on every step of every turn)."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def tracer() -> Tracer:
    """eve's tracer, from the global provider as it is now.

    Looked up again whenever the provider changes: the API's proxy tracer would stay with the
    first provider set, and a test (or an embedding that reconfigures) may set another."""
    global _tracer
    provider = trace.get_tracer_provider()
    if _tracer is None or _tracer[0] is not provider:
        _tracer = (provider, provider.get_tracer("eve"))
    return _tracer[1]


#: ``ErrorName: message``, as eve writes an error into an event or a tool result
_NAMED = re.compile(r"^([A-Za-z_][\w.]*): (.*)$", re.DOTALL)


def nanoseconds(at: str) -> int:
    """An event's ``meta.at`` (ISO-8601) as the nanoseconds OpenTelemetry takes."""
    return int(datetime.fromisoformat(at).timestamp() * 1_000_000_000)


def fail(span: Span, kind: str, message: str, *, stacktrace: str | None = None) -> None:
    """Mark ``span`` failed with an ``exception`` event: its type and message, redacted.

    A stack trace only where it helps (a tool's own, already bounded and redacted: see
    ``eve.execution.tracebacks``); the frames of eve's loop would tell a reader nothing."""
    message = redact(message)
    span.set_attribute(ERROR_TYPE, kind)
    attributes = {"exception.type": kind, "exception.message": message}
    if stacktrace is not None:
        attributes[EXCEPTION_STACKTRACE] = stacktrace
    span.add_event("exception", attributes)
    span.set_status(Status(StatusCode.ERROR, f"{kind}: {message}"))


def fail_with_text(span: Span, text: str, *, stacktrace: str | None = None) -> None:
    """``fail`` for an error eve already wrote as ``ErrorName: message``."""
    named = _NAMED.match(text)
    if named is None:
        fail(span, "_OTHER", text, stacktrace=stacktrace)
    else:
        fail(span, named.group(1), named.group(2), stacktrace=stacktrace)


class SpanBlock:
    """A span around a ``with`` block: ``close`` runs as the block ends, with the exception
    that ends it, if one does."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close(error)

    def close(self, error: BaseException | None) -> None:
        raise NotImplementedError
