"""A tracer provider for ``eve serve`` / ``dev`` / ``run``, set only when ``OTEL_*`` asks.

The only module that imports the OpenTelemetry SDK (the ``eve-durable[otel]`` extra), and only
when asked: an endpoint (``OTEL_EXPORTER_OTLP_ENDPOINT``,
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) or an exporter (``OTEL_TRACES_EXPORTER``). The
exporter and the batch processor read the rest of the standard variables themselves
(headers, timeouts, ``OTEL_BSP_*``, ``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``).
A provider already set (by the application eve runs in) is never replaced.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from opentelemetry import trace

from eve.errors import TracingSetupError

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter

#: the variables that ask for traces, in the order a message names them
ASKING = (
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_TRACES_EXPORTER",
)
#: the exporters eve sets up (``OTEL_TRACES_EXPORTER``)
EXPORTERS = ("otlp", "console", "none")


def asked_for(env: Mapping[str, str]) -> str | None:
    """The variable that asks for traces, if one does (``OTEL_SDK_DISABLED`` wins)."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    return next((name for name in ASKING if env.get(name, "").strip()), None)


def install_from_environment(env: Mapping[str, str] = os.environ) -> bool:
    """Set the global tracer provider as ``OTEL_*`` asks; whether one was set now.

    Nothing happens when nothing asks, when ``OTEL_TRACES_EXPORTER`` is ``none`` or when a
    provider is set already. Raises ``TracingSetupError`` when asked for traces eve cannot
    export: the SDK is missing (install ``eve-durable[otel]``) or the exporter or protocol is one
    eve does not set up.
    """
    variable = asked_for(env)
    if variable is None:
        return False
    exporter = env.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() or "otlp"
    if exporter not in EXPORTERS:
        raise TracingSetupError(
            f"OTEL_TRACES_EXPORTER={exporter!r}: eve sets up 'otlp' (HTTP/protobuf), "
            "'console' or 'none'; set one of them, or set a tracer provider in your own code "
            "before eve starts",
            variable="OTEL_TRACES_EXPORTER",
        )
    if exporter == "none" or not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return False
    trace.set_tracer_provider(_provider(exporter, variable, env))
    return True


def _provider(exporter: str, variable: str, env: Mapping[str, str]) -> trace.TracerProvider:
    try:
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            ConsoleSpanExporter,
        )
    except ImportError:
        raise TracingSetupError(
            f"{variable} asks for traces, and the OpenTelemetry SDK is not installed: "
            "install eve with its otel extra (pip install 'eve-durable[otel]'), or unset "
            f"{variable}",
            variable=variable,
        ) from None
    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = Resource.create({SERVICE_NAME: "eve"})
    chosen: SpanExporter = ConsoleSpanExporter() if exporter == "console" else _otlp(variable, env)
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(chosen))
    return provider


def _otlp(variable: str, env: Mapping[str, str]) -> SpanExporter:
    protocol = (
        env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or ""
    )
    if protocol.strip() not in ("", "http/protobuf"):
        raise TracingSetupError(
            f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r}: eve-durable[otel] exports over "
            "'http/protobuf'; set that (or nothing), and point the endpoint at the "
            "collector's HTTP port (4318)",
            variable="OTEL_EXPORTER_OTLP_PROTOCOL",
        )
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        raise TracingSetupError(
            f"{variable} asks for traces over OTLP, and the OTLP exporter is not "
            "installed: install eve with its otel extra (pip install 'eve-durable[otel]')",
            variable=variable,
        ) from None
    return OTLPSpanExporter()
