"""An OTLP/HTTP trace receiver on loopback: what a collector would get from ``eve serve``.

It decodes each ``POST /v1/traces`` body (protobuf ``ExportTraceServiceRequest``) into
``ReceivedSpan`` values, so a test reads the spans a server process really exported.
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


@dataclass(frozen=True)
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    #: "" for a root span
    parent_id: str
    attributes: dict[str, Any]
    #: the status code: 0 unset, 1 ok, 2 error
    status: int


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None


class Receiver:
    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.lock = threading.Lock()

    def take(self, body: bytes) -> None:
        request = ExportTraceServiceRequest.FromString(body)
        found = [
            ReceivedSpan(
                name=span.name,
                trace_id=span.trace_id.hex(),
                span_id=span.span_id.hex(),
                parent_id=span.parent_span_id.hex(),
                attributes={a.key: _value(a.value) for a in span.attributes},
                status=span.status.code,
            )
            for resource in request.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
        ]
        with self.lock:
            self.spans += found

    def named(self, name: str) -> list[ReceivedSpan]:
        with self.lock:
            return [s for s in self.spans if s.name == name]

    def wait_for(self, done: Callable[[Receiver], bool], timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not done(self):
            assert time.monotonic() < deadline, f"spans so far: {[s.name for s in self.spans]}"
            time.sleep(0.05)


@contextmanager
def otlp_receiver() -> Iterator[tuple[Receiver, str]]:
    """A running receiver and the endpoint to give ``OTEL_EXPORTER_OTLP_ENDPOINT``."""
    receiver = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            if self.headers.get("content-encoding") == "gzip":
                body = gzip.decompress(body)
            receiver.take(body)
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
