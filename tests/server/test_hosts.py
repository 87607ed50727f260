"""eve.server.hosts: how Host and Origin headers are read, which hosts a server answers by
default, and the configurations ``eve serve`` refuses to start with."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from eve.cli.main import main
from eve.errors import ServerConfigError
from eve.server.hosts import (
    LOOPBACK,
    AllowedHosts,
    HostPort,
    allowed_hosts,
    listed_hosts,
    parse_host,
    parse_origin,
)

STRONG = "s" * 32
DEFAULT = {"127.0.0.1", "localhost", "::1"}


@pytest.mark.parametrize(
    ("header", "name", "port"),
    [
        ("127.0.0.1", "127.0.0.1", None),
        ("127.0.0.1:8123", "127.0.0.1", 8123),
        ("LocalHost:80", "localhost", 80),
        ("localhost.", "localhost", None),  # the fully qualified spelling of the same name
        ("[::1]", "::1", None),
        ("[::1]:8000", "::1", 8000),
        ("[0:0:0:0:0:0:0:1]:8000", "::1", 8000),  # one address, one spelling
        ("agent.example.com", "agent.example.com", None),
    ],
)
def test_a_host_header_is_read_as_name_and_port(header: str, name: str, port: int | None) -> None:
    assert parse_host(header) == HostPort(name=name, port=port)


@pytest.mark.parametrize(
    "header",
    [
        "",
        "::1",  # IPv6 needs brackets in a Host
        "[::1",
        "[::1]x",
        "[127.0.0.1]",
        "127.0.0.1:",
        "127.0.0.1:0",
        "127.0.0.1:65536",
        "127.0.0.1:80:80",
        "127.0.0.1:８０",  # fullwidth digits are not ASCII digits
        "user@127.0.0.1",
        "127.0.0.1/path",
        "exa mple.com",
        "-leading.example",
    ],
)
def test_what_is_not_a_host_header_is_none(header: str) -> None:
    assert parse_host(header) is None


def test_an_origin_is_a_scheme_and_an_authority_only() -> None:
    origin = parse_origin("https://Agent.Example.com")
    assert origin is not None
    assert (origin.scheme, origin.host.name, origin.port) == ("https", "agent.example.com", 443)
    local = parse_origin("http://[::1]:8000")
    assert local is not None and (local.host.name, local.port) == ("::1", 8000)
    for refused in ("null", "file://", "ftp://127.0.0.1", "http://", "http://a/b", "127.0.0.1"):
        assert parse_origin(refused) is None, refused


def test_an_origin_must_be_on_the_servers_port_and_an_allowed_or_its_own_host() -> None:
    host = HostPort(name="127.0.0.1", port=8000)
    allows = LOOPBACK.allows_origin

    def origin(text: str) -> bool:
        parsed = parse_origin(text)
        assert parsed is not None
        return allows(parsed, host)

    assert origin("http://127.0.0.1:8000")
    assert origin("http://localhost:8000")  # another name of the same server
    assert not origin("http://127.0.0.1:9999")  # another server on the machine
    assert not origin("http://127.0.0.1")  # port 80
    assert not origin("http://attacker.example:8000")
    # behind a proxy the Host has no port: the origin's scheme says which one it means
    proxied = HostPort(name="agent.example.com")
    any_host = AllowedHosts(names=frozenset(DEFAULT), any_host=True)
    https = parse_origin("https://agent.example.com")
    assert https is not None and any_host.allows_origin(https, proxied)
    other = parse_origin("https://attacker.example")
    # answering any Host is not accepting any origin: still only the server's own
    assert other is not None and not any_host.allows_origin(other, proxied)


def test_the_default_hosts_are_loopback_and_the_bind_address() -> None:
    assert allowed_hosts(bind="127.0.0.1", listed=(), token=None) == LOOPBACK
    assert allowed_hosts(bind="::1", listed=(), token=None) == LOOPBACK
    mounted = allowed_hosts(bind=None, listed=("agent.example.com",), token=None)
    assert mounted.names == {*DEFAULT, "agent.example.com"} and not mounted.any_host
    lan = allowed_hosts(bind="192.168.1.5", listed=(), token=STRONG)
    assert lan.names == {*DEFAULT, "192.168.1.5"} and not lan.any_host


def test_a_wildcard_bind_answers_any_host_unless_hosts_are_listed() -> None:
    for bind in ("0.0.0.0", "::", "[::]"):
        assert allowed_hosts(bind=bind, listed=(), token=STRONG).any_host, bind
    narrowed = allowed_hosts(bind="0.0.0.0", listed=("agent.example.com",), token=STRONG)
    assert narrowed.names == {*DEFAULT, "agent.example.com"} and not narrowed.any_host


def test_a_star_needs_a_strong_token() -> None:
    assert allowed_hosts(bind="127.0.0.1", listed=("*",), token=STRONG).any_host
    for token in (None, "short"):
        with pytest.raises(ServerConfigError, match="32 characters or more") as refused:
            allowed_hosts(bind="127.0.0.1", listed=("*",), token=token)
        assert "short" not in str(refused.value)


@pytest.mark.parametrize(
    "entry", ["http://agent.example.com", "agent.example.com:8000", "a/b", "", "exa mple"]
)
def test_an_entry_that_is_not_a_host_is_refused(entry: str) -> None:
    with pytest.raises(ServerConfigError, match="without scheme, port or path"):
        allowed_hosts(bind="127.0.0.1", listed=(entry,), token=None)


def test_the_option_wins_over_the_environment() -> None:
    env = {"EVE_ALLOWED_HOSTS": " a.example ,b.example,, "}
    assert listed_hosts((), env) == ("a.example", "b.example")
    assert listed_hosts(("c.example", "d.example,e.example"), env) == (
        "c.example",
        "d.example",
        "e.example",
    )
    assert listed_hosts((), {}) == ()


@pytest.mark.parametrize(
    ("args", "env", "said"),
    [
        (["--allowed-host", "http://agent.example.com"], {}, "without scheme, port or path"),
        (["--allowed-host", "*"], {}, "allowed host '*' answers pages of any name"),
        ([], {"EVE_ALLOWED_HOSTS": "agent.example.com:443"}, "'agent.example.com:443'"),
    ],
)
def test_eve_serve_refuses_hosts_it_cannot_answer_safely(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    env: dict[str, str],
    said: str,
) -> None:
    monkeypatch.delenv("EVE_API_TOKEN", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = CliRunner().invoke(main, ["-C", str(tmp_path), "serve", *args])
    assert result.exit_code == ServerConfigError.exit_code == 2, result.output
    assert said in result.output
