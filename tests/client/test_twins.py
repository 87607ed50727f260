"""The sync and async clients are one API: the same methods, each sending the same call."""

from __future__ import annotations

import inspect

from eve.client import AsyncEveClient, EveClient

#: how each client is closed: the one place their names differ, as in httpx
CLOSING = {"close", "aclose"}


def public(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in vars(cls).items()
        if callable(member) and not name.startswith("_") and name not in CLOSING
    }


def test_both_clients_have_the_same_methods_and_signatures() -> None:
    sync, asynchronous = public(EveClient), public(AsyncEveClient)
    assert sorted(sync) == sorted(asynchronous)
    assert len(sync) >= 12
    for name, signature in sync.items():
        twin = asynchronous[name]
        assert list(signature.parameters) == list(twin.parameters), name
        # an awaitable method returns what the blocking one does (streams are iterators)
        returned = str(twin.return_annotation).replace("AsyncIterator", "Iterator")
        assert str(signature.return_annotation) == returned, name
        if name not in ("stream", "turn_events"):
            assert inspect.iscoroutinefunction(getattr(AsyncEveClient, name)), name


def test_each_async_method_points_at_the_blocking_one_that_says_what_it_does() -> None:
    for name in public(AsyncEveClient):
        pointer = getattr(AsyncEveClient, name).__doc__
        said = getattr(EveClient, name).__doc__
        assert pointer == (None if said is None else f"As ``EveClient.{name}``."), name
