"""What both clients share besides their calls (``calls.py``): the server's root, retries,
error answers and the stream's reconnect bookkeeping.

Nothing here does I/O, so the sync and async clients differ only in how they wait.
"""

from __future__ import annotations

import ssl
import time
import uuid
from pathlib import Path
from typing import Any

from eve.errors import APIError, ServerNotTrusted, ServerUnreachable
from eve.events import OtherEvent, SessionEvent, decode_any_event
from eve.messages import MediaPart
from eve.wire.answers import decode_refusal

PREFIX = "/eve/v1"

#: what a message may carry besides its text: a part, or a file read into one
Attachable = MediaPart | Path

#: the events that end a turn's run: done, failed, cancelled, or parked on a person
TURN_END = frozenset({"turn.completed", "turn.failed", "turn.cancelled", "turn.waiting"})


def server_root(url: str) -> str:
    """The server's root URL, whether the caller gave it or the ``/eve/v1`` base."""
    url = url.rstrip("/")
    return url[: -len(PREFIX)] if url.endswith(PREFIX) else url


def auth_headers(token: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"} if token else {}


#: the header that makes a POST safe to repeat (the server answers a repeat with its first answer)
IDEMPOTENCY_HEADER = "Idempotency-Key"


def idempotency_headers() -> dict[str, str]:
    """A fresh key for one logical request, kept across its retries."""
    return {IDEMPOTENCY_HEADER: str(uuid.uuid4())}


class Attempt:
    """One logical request's tries: a ``repeatable`` one carries an ``Idempotency-Key`` and
    is sent again with it after a lost connection or a 503 (the server's storage may come
    back), backing off, until ``timeout``; any other request is tried once."""

    def __init__(self, *, repeatable: bool, timeout: float) -> None:
        self.repeatable = repeatable
        self.headers = idempotency_headers() if repeatable else None
        self._backoff = Backoff(timeout)

    def outcome(self, response: Any) -> bytes | float:
        """The answer's body, or the seconds to wait before the next try; raises the
        named error when there is none. ``response`` is an ``httpx.Response`` or the
        ``httpx.TransportError`` the request raised."""
        if isinstance(response, Exception):
            if not self.repeatable or untrusted(response) is not None:
                raise unreachable(response) from None
            return self._backoff.delay(response)
        if response.is_error:
            failure = api_error(response.status_code, response.content)
            if not (self.repeatable and response.status_code == 503):
                raise failure
            return self._backoff.delay(failure)
        content: bytes = response.content
        return content


def unreachable(error: Exception) -> ServerUnreachable:
    refusal = untrusted(error)
    if refusal is not None:
        return ServerNotTrusted(
            f"the eve server's TLS certificate was not trusted ({refusal.verify_message}); "
            "if your own CA signed it, set SSL_CERT_FILE to that CA's certificate bundle"
        )
    return ServerUnreachable(
        f"the eve server did not answer ({type(error).__name__}); "
        "is `eve serve` running at this URL?"
    )


def untrusted(error: BaseException) -> ssl.SSLCertVerificationError | None:
    """The refusal of the server's certificate behind ``error`` (httpx's ``ConnectError``
    wraps httpcore's, which wraps the ``ssl`` module's), if that is what it is."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, ssl.SSLCertVerificationError):
            return cause
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return None


def api_error(status: int, content: bytes) -> APIError:
    """The named error for an ``{ok: false, code, error}`` answer (or any non-JSON one)."""
    body = decode_refusal(content)
    return APIError(f"{status} {body.code}: {body.error}", status=status, code=body.code)


class Backoff:
    """How long to wait before trying again, and when to give up (``ServerUnreachable``)."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._failing_since: float | None = None
        self._attempts = 0

    def reset(self) -> None:
        self._failing_since, self._attempts = None, 0

    def delay(self, error: Exception) -> float:
        """Seconds to wait before the next try; raises once the server has been away too long."""
        if untrusted(error) is not None:
            raise unreachable(error) from None  # no retry makes the certificate trusted
        now = time.monotonic()
        if self._failing_since is None:
            self._failing_since = now
        if now - self._failing_since > self.timeout:
            if isinstance(error, APIError):
                raise error
            raise ServerUnreachable(
                f"the eve server did not answer for {self.timeout:g} s "
                f"({type(error).__name__}); is `eve serve` running at this URL?"
            ) from None
        self._attempts += 1
        return float(min(0.1 * 2 ** (self._attempts - 1), 2.0))


class StreamCursor:
    """Where a stream reader is: the next index it wants, and how long it may keep retrying.

    A reader that reconnects asks for ``startIndex=next_index`` and drops anything below it,
    so a reconnect shows no gap and no duplicate.
    """

    def __init__(
        self,
        start_index: int,
        *,
        until: frozenset[str] = frozenset(),
        turn_id: str | None = None,
        reconnect_timeout: float,
    ) -> None:
        self.next_index = start_index
        self.until = until
        self.turn_id = turn_id
        self.reconnect_timeout = reconnect_timeout
        self.done = False
        self._backoff = Backoff(reconnect_timeout)

    def params(self, follow: bool) -> dict[str, str]:
        return {"startIndex": str(self.next_index), "follow": "true" if follow else "false"}

    def accept(self, line: bytes | str) -> SessionEvent | None:
        """The event on this line if the reader should see it; blank lines are heartbeats."""
        if not line.strip():
            return None
        self._backoff.reset()
        event = decode_any_event(line)
        if event.meta.index < self.next_index:
            return None
        self.next_index = event.meta.index + 1
        if isinstance(event, OtherEvent):
            return None  # a newer server's event type: nothing this client acts on
        if self.turn_id is not None and event.data.turn_id != self.turn_id:
            return None
        # a subagent's turn (it carries ``parent``) ends inside the caller's, not the stream;
        # but when it parks on a person, the caller's turn is parked too
        delegated = event.data.parent is not None
        if event.type in self.until and (not delegated or event.type == "turn.waiting"):
            self.done = True
        return event

    def retry_delay(self, error: Exception) -> float:
        """Seconds to wait before reconnecting; raises once the server has been away too long."""
        return self._backoff.delay(error)
