"""Which work serves a request: the context a request's task runs in is marked until its
answer is complete (``serving_loop.py`` runs what is marked before the turns' work).

uvicorn starts a task per request (``serving_protocol`` starts it in a marked context); a
task it starts inherits the mark (the turn a message starts), and loses it with the answer
(``answered``, once the app has answered: ``server_timing.ServerTiming``).
"""

from __future__ import annotations

import contextvars
import time
from dataclasses import dataclass
from typing import Any

#: the scope's key for when a request's bytes were read (``time.perf_counter``)
READ_AT = "eve.read_at"


@dataclass
class Serving:
    """A request being served: its callbacks go first while ``urgent``."""

    urgent: bool = True


#: the request a context serves, if it serves one (``ServingLoop.call_soon``)
SERVING: contextvars.ContextVar[Serving | None] = contextvars.ContextVar(
    "eve_serving", default=None
)


def serving_context() -> contextvars.Context:
    """A copy of the current context marked as serving a new request."""
    context = contextvars.copy_context()
    context.run(SERVING.set, Serving())
    return context


def answered() -> None:
    """The request the current context serves is answered: what it left behind (a turn it
    started) is the turns' work from now on."""
    serving = SERVING.get()
    if serving is not None:
        serving.urgent = False


def serving_protocol(protocol_class: type[Any]) -> type[Any]:
    """``protocol_class`` (uvicorn's httptools protocol), starting each request's task in a
    context marked as serving it, noting in its scope when its bytes were read (``READ_AT``,
    for ``server_timing.py``), and having its loop look at its socket between two slices of
    the turns' work (``ServingLoop.watch_socket``); another class (h11's) as it is."""
    if not hasattr(protocol_class, "_start_asgi_task"):
        return protocol_class

    class ServingProtocol(protocol_class):  # type: ignore[misc]
        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            watch_socket = getattr(self.loop, "watch_socket", None)
            sock = transport.get_extra_info("socket")
            if watch_socket is not None and sock is not None:
                watch_socket(sock.fileno())

        def on_message_begin(self) -> None:
            read_at = time.perf_counter()
            super().on_message_begin()
            self.scope[READ_AT] = read_at

        def _start_asgi_task(self, cycle: Any, app: Any) -> None:
            # uvicorn's own, in a context of the request's (its ``reset_contextvars``
            # option, which eve never sets, aside)
            task = self.loop.create_task(cycle.run_asgi(app), context=serving_context())
            task.add_done_callback(self.tasks.discard)
            self.tasks.add(task)

    return ServingProtocol
