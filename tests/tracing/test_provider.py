"""``eve serve`` / ``dev`` / ``run`` set up a tracer provider only when OTEL_* asks, never over
one the host set, and refuse to start when asked for traces they cannot export."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from click.testing import CliRunner
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from eve.cli import main
from eve.errors import TracingSetupError
from eve.tracing.provider import install_from_environment
from tests.conftest import AppFactory
from tests.tracing.conftest import reset_global_provider

ENDPOINT = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}


@pytest.fixture
def no_provider() -> Iterator[None]:
    reset_global_provider()
    yield
    provider = trace.get_tracer_provider()
    if isinstance(provider, TracerProvider):
        provider.shutdown()
    reset_global_provider()


def test_nothing_is_set_up_unless_asked(no_provider: None) -> None:
    assert install_from_environment({}) is False
    assert install_from_environment({**ENDPOINT, "OTEL_SDK_DISABLED": "true"}) is False
    assert install_from_environment({"OTEL_TRACES_EXPORTER": "none"}) is False
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def test_asked_it_sets_a_provider_named_eve(no_provider: None) -> None:
    assert install_from_environment(ENDPOINT) is True
    provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider)
    assert provider.resource.attributes["service.name"] == "eve"
    assert install_from_environment(ENDPOINT) is False  # set already: kept


def test_a_provider_the_host_set_is_never_replaced(spans: InMemorySpanExporter) -> None:
    host = trace.get_tracer_provider()
    assert install_from_environment({**ENDPOINT, "OTEL_TRACES_EXPORTER": "console"}) is False
    assert trace.get_tracer_provider() is host


def test_asked_without_the_sdk_it_names_the_extra(
    no_provider: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # what importing it does where eve[otel] is not installed
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)
    with pytest.raises(TracingSetupError) as raised:
        install_from_environment(ENDPOINT)
    assert raised.value.variable == "OTEL_EXPORTER_OTLP_ENDPOINT"
    assert "pip install 'eve-durable[otel]'" in str(raised.value)


def test_an_exporter_or_protocol_eve_does_not_set_up_is_refused(no_provider: None) -> None:
    with pytest.raises(TracingSetupError) as raised:
        install_from_environment({**ENDPOINT, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})
    assert raised.value.variable == "OTEL_EXPORTER_OTLP_PROTOCOL" and "4318" in str(raised.value)
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def test_eve_run_refuses_to_start_with_a_setup_it_cannot_do(
    make_app: AppFactory, no_provider: None
) -> None:
    root = make_app()
    done = CliRunner().invoke(
        main, ["-C", str(root), "run", "hi"], env={"OTEL_TRACES_EXPORTER": "zipkin"}
    )
    assert done.exit_code == 2, done.output
    assert "eve: OTEL_TRACES_EXPORTER='zipkin'" in done.output
    assert "'otlp' (HTTP/protobuf), 'console' or 'none'" in done.output
