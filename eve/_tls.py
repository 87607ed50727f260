"""One TLS context per process and HTTP library, shared by the HTTP clients eve makes.

An httpx (or httpx2) client left to ``verify=True`` builds its own ``ssl.SSLContext`` and
loads the CA bundle into it: 22-30 ms of CPU for every model SDK client (one per event
loop), ``EveClient``, webhook delivery and key fetch, where the context is the same each
time. Given one, the client only uses it. A context holds no state of the client's own: the
ALPN list httpcore sets on it at each connection is ``http/1.1`` for every client eve makes
(none speaks HTTP/2).
"""

from __future__ import annotations

import functools
import ssl
from typing import Literal, assert_never

#: the HTTP library a client is built on: each has its own default CA bundle (httpx
#: certifi's, httpx2 the system's), kept as it is
HttpLibrary = Literal["httpx", "httpx2"]


@functools.cache
def shared_tls_context(library: HttpLibrary) -> ssl.SSLContext:
    """What ``verify=True`` gives a client of ``library`` (its CA bundle, or ``SSL_CERT_FILE``
    and ``SSL_CERT_DIR`` as set at the first call), made once per process."""
    match library:
        case "httpx":
            import httpx

            return httpx.create_ssl_context()
        case "httpx2":
            import httpx2

            return httpx2.create_ssl_context()
        case _:
            assert_never(library)
