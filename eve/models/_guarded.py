"""A translator that lets no exception but eve's out: the last line of "never a non-eve
exception out of an adapter" (issue 32).

The SDKs build stream events without validating them, so a field may hold any JSON value
and an unknown type may read as some known one. The translators read defensively; should
one still trip over a value it did not foresee (a ``TypeError``, a ``KeyError`` …), the turn
gets a ``ModelProtocolError`` naming the event, not a traceback from inside the adapter.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from eve.errors import ModelError
from eve.models._streaming import Translator
from eve.models._tool_input import protocol_error
from eve.models.events import ModelEvent

# what reading a malformed value can raise; anything else is not about the stream
_MISREAD = (TypeError, AttributeError, LookupError, ValueError)


class GuardedTranslator:
    """``inner``'s events, with any error reading an item made a protocol error."""

    def __init__(self, provider: str, inner: Translator[Any]) -> None:
        self._provider = provider
        self._inner = inner

    def feed(self, item: Any) -> Iterable[ModelEvent]:
        try:
            return list(self._inner.feed(item))
        except ModelError:
            raise
        except _MISREAD as error:
            kind = getattr(item, "type", None) or type(item).__name__
            raise protocol_error(
                self._provider,
                f"the stream sent an event eve cannot read ({kind}: {type(error).__name__})",
            ) from error

    def finish(self) -> Iterable[ModelEvent]:
        try:
            return list(self._inner.finish())
        except ModelError:
            raise
        except _MISREAD as error:
            raise protocol_error(
                self._provider, f"the stream ended in a way eve cannot read ({error!r})"
            ) from error
