"""Which ``Host`` headers and ``Origin``\\ s the server answers: the allow-list that stops DNS
rebinding, and the same-origin rule that stops cross-site requests (CSRF).

A loopback server is reachable from any page the person's browser opens: a page on
``attacker.example`` whose name is re-pointed at ``127.0.0.1`` (DNS rebinding) reaches it
with ``Host: attacker.example``, and a page of any origin can post a form to it. So a host
is answered only when it is listed (the loopback names and the bind address by default),
and a state-changing request only from the server's own origin (``guard.py``).
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from eve.errors import ServerConfigError
from eve.server.auth import MIN_PUBLIC_TOKEN_LENGTH, TOKEN_ENV, is_strong_token

#: the names every server answers to: a browser on the machine reaches it by these
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
#: comma-separated hosts to allow beside the defaults, when no ``--allowed-host`` is given
ALLOWED_HOSTS_ENV = "EVE_ALLOWED_HOSTS"
#: the entry that allows every host; only behind a strong token
ANY_HOST = "*"
#: the port an origin of each scheme means when it names none
DEFAULT_PORTS = {"http": 80, "https": 443}
#: longest ``Host`` shown back in an error: the header is the client's, of any length
SHOWN_HOST_CHARS = 100

_NAME = re.compile(r"^[a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_])?$")
_PORT = re.compile(r"^[0-9]{1,5}$")


@dataclass(frozen=True, kw_only=True)
class HostPort:
    """A ``Host`` header (or an origin's authority), parsed."""

    #: a lower-case name or an IP address in its shortest form, IPv6 without brackets
    name: str
    port: int | None = None

    def port_for(self, scheme: str) -> int:
        """The port, or the one ``scheme`` means when none is named."""
        return self.port if self.port is not None else DEFAULT_PORTS[scheme]


@dataclass(frozen=True, kw_only=True)
class Origin:
    """An ``Origin`` header: ``http`` or ``https``, and where the page was loaded from."""

    scheme: str
    host: HostPort

    @property
    def port(self) -> int:
        return self.host.port_for(self.scheme)


@dataclass(frozen=True, kw_only=True)
class AllowedHosts:
    """The hosts a server answers to."""

    #: names and addresses, normalized as ``HostPort.name``; always the loopback ones
    names: frozenset[str]
    #: every ``Host`` is answered (``*``, or a wildcard bind with no host listed): a strong
    #: token guards the routes, and origins must still be the server's own
    any_host: bool = False

    def allows(self, host: HostPort) -> bool:
        return self.any_host or host.name in self.names

    def allows_origin(self, origin: Origin, host: HostPort) -> bool:
        """``origin`` may change state on the server reached as ``host``: it is on the
        same port, and it is the same host or an allowed one (``localhost`` for a server
        reached as ``127.0.0.1``). The port matters: another server on the machine is
        another origin, however trusted its host name."""
        if origin.port != host.port_for(origin.scheme):
            return False
        return origin.host.name == host.name or origin.host.name in self.names


LOOPBACK = AllowedHosts(names=frozenset(LOOPBACK_HOSTS))


def allowed_hosts(*, bind: str | None, listed: Sequence[str], token: str | None) -> AllowedHosts:
    """The hosts a server bound to ``bind`` answers (None: mounted in another app, whose
    address eve does not know): the loopback names, ``bind`` unless it is a wildcard
    (``0.0.0.0``, ``::``), and ``listed``.

    A wildcard bind with nothing listed answers any host: it is reachable by names eve
    cannot know (a proxy's, a container's), and it needs a strong token anyway
    (``require_token_for``). ``*`` in ``listed`` answers any host too, and needs the same
    token, since without one a page could reach the server through any name.
    Raises ``ServerConfigError`` for an entry that is not a host name or an address.
    """
    names = set(LOOPBACK_HOSTS)
    wildcard_bind = bind is not None and _is_wildcard(bind)
    if bind is not None and not wildcard_bind:
        names.add(_listed_name(bind, what="--host"))
    names.update(_listed_name(entry) for entry in listed if entry != ANY_HOST)
    any_host = ANY_HOST in listed or (wildcard_bind and not listed)
    if ANY_HOST in listed and not is_strong_token(token):
        raise ServerConfigError(
            f"allowed host {ANY_HOST!r} answers pages of any name, which needs {TOKEN_ENV} "
            f"set to a random token of {MIN_PUBLIC_TOKEN_LENGTH} characters or more; "
            "list the host names instead"
        )
    return AllowedHosts(names=frozenset(names), any_host=any_host)


def listed_hosts(option: Sequence[str], env: Mapping[str, str]) -> tuple[str, ...]:
    """The hosts to allow beside the defaults: ``--allowed-host`` (repeatable, each may
    also be comma-separated), else ``EVE_ALLOWED_HOSTS`` (comma-separated)."""
    raw = option if option else [env.get(ALLOWED_HOSTS_ENV, "")]
    return tuple(entry.strip() for item in raw for entry in item.split(",") if entry.strip())


#: every request carries the same few values: parse each once (the results are frozen)
@functools.lru_cache(maxsize=256)
def parse_host(header: str) -> HostPort | None:
    """A ``Host`` header (``name``, ``name:port``, ``[v6]``, ``[v6]:port``), or None when
    it is none of those."""
    value = header.strip()
    port: str | None = None
    if value.startswith("["):
        close = value.find("]")
        name, rest = value[1:close], value[close + 1 :]
        if close < 0 or not _is_ipv6(name) or (rest and not rest.startswith(":")):
            return None
        port = rest[1:] if rest else None
    elif value.count(":") > 1:  # a bare IPv6 address is not a Host: it needs brackets
        return None
    else:
        name, colon, after = value.partition(":")
        port = after if colon else None
    normal = _normal_name(name)
    if normal is None or (port is not None and not _is_port(port)):
        return None
    return HostPort(name=normal, port=None if port is None else int(port))


@functools.lru_cache(maxsize=256)
def parse_origin(header: str) -> Origin | None:
    """An ``Origin`` header (``scheme://host[:port]``), or None for ``null``, another
    scheme, or anything else."""
    scheme, sep, authority = header.strip().partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in DEFAULT_PORTS or any(c in authority for c in "/?#@"):
        return None
    host = parse_host(authority)
    return None if host is None else Origin(scheme=scheme, host=host)


def shown_header(header: str) -> str:
    """A client's header as an error may repeat it: cut, and in printable ASCII."""
    return header[:SHOWN_HOST_CHARS].encode("ascii", "backslashreplace").decode("ascii")


def _listed_name(entry: str, *, what: str = "allowed host") -> str:
    raw = entry.strip()
    inner = raw[1:-1] if raw.startswith("[") and raw.endswith("]") else raw
    name = _normal_name(inner)
    if name is None:
        raise ServerConfigError(
            f"{what} {entry!r} is not a host name or an IP address: give the name alone, "
            "without scheme, port or path (e.g. agent.example.com, 10.0.0.5, [::1])"
        )
    return name


def _normal_name(name: str) -> str | None:
    """``name`` lower-cased, without one trailing dot, an IP address in its shortest form;
    None when it is not a host name or an address."""
    lowered = name.lower().removesuffix(".")
    try:
        return ipaddress.ip_address(lowered).compressed
    except ValueError:
        pass
    return lowered if _NAME.match(lowered) else None


def _is_port(text: str) -> bool:
    return bool(_PORT.match(text)) and 0 < int(text) < 65536


def _is_ipv6(text: str) -> bool:
    try:
        return ipaddress.ip_address(text).version == 6
    except ValueError:
        return False


def _is_wildcard(bind: str) -> bool:
    if not bind:
        return True
    try:
        return ipaddress.ip_address(bind.strip("[]")).is_unspecified
    except ValueError:
        return False
