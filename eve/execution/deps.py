"""A turn's deps: built by the node's factory when the turn starts, closed when it ends.

The object lives for one turn, in ``EveContext.deps`` (where tools, hooks and dynamic
instructions read it), and is never serialized: a turn resumed after a crash, or run on
another worker, builds its own. What it holds is closed at the end of the turn, however the
turn ends (completed, failed, cancelled, the process stopping):

* a generator factory (sync or async) is finished after its ``yield``; an exception that
  ended the turn is raised at the ``yield`` (as in ``contextlib.contextmanager``);
* otherwise the object's ``aclose()`` is awaited, else its ``close()`` is called; one that
  has neither but is a context manager (sync or async) is entered when built and exited
  then.

A teardown that raises is logged, not raised: the turn's outcome is decided by then, and a
completed turn's history must still reach its checkpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import AsyncIterator
from contextvars import ContextVar
from typing import Any

from eve.authoring.deps import DepsFactory, TurnInfo, takes_one_argument
from eve.context.active import EveContext
from eve.errors import DepsFactoryFailed
from eve.runtime.resolved import ResolvedDeps

log = logging.getLogger("eve.deps")

#: the running turn's exit stack, where built deps register how they close
_TURN_STACK: ContextVar[contextlib.AsyncExitStack | None] = ContextVar(
    "eve_turn_deps", default=None
)


@contextlib.asynccontextmanager
async def deps_scope(context: EveContext) -> AsyncIterator[None]:
    """The life of one turn's deps: what ``open_deps`` builds inside is closed on exit,
    and ``context.deps`` is put back to what it was."""
    stack = contextlib.AsyncExitStack()
    before = context.deps
    token = _TURN_STACK.set(stack)
    try:
        yield
    except BaseException as error:
        await _close(stack, error)
        raise
    else:
        await _close(stack, None)
    finally:
        _TURN_STACK.reset(token)
        context.deps = before


async def _close(stack: contextlib.AsyncExitStack, error: BaseException | None) -> None:
    try:
        if error is None:
            await stack.aclose()
        else:
            await stack.__aexit__(type(error), error, error.__traceback__)
    except Exception as failed:
        if failed is not error:  # a generator that re-raised the turn's error closed fine
            log.warning("closing the turn's deps failed: %s: %s", type(failed).__name__, failed)


async def open_deps(resolved: ResolvedDeps | None, info: TurnInfo, context: EveContext) -> None:
    """Build the turn's deps with ``resolved``'s factory into ``context.deps`` (nothing
    without a factory), registering how they close with the running ``deps_scope``.

    Raises ``DepsFactoryFailed`` when the factory raises or its generator yields nothing.
    """
    if resolved is None:
        return
    stack = _TURN_STACK.get()
    assert stack is not None, "open_deps runs inside the turn's deps_scope"
    try:
        context.deps = await _built(resolved.factory, info, stack)
    except Exception as error:
        where = resolved.logical_path or f"node {resolved.owner!r}"
        inherited = "" if resolved.owner == info.node_id else f" (inherited by {info.node_id!r})"
        raise DepsFactoryFailed(
            f"the deps factory of {where}{inherited} raised {type(error).__name__}: {error}; "
            "the turn did not start (fix the factory, or what it connects to)",
            node_id=info.node_id,
        ) from error


async def _built(factory: DepsFactory, info: TurnInfo, stack: contextlib.AsyncExitStack) -> Any:
    arguments = (info,) if takes_one_argument(factory) else ()
    if inspect.isasyncgenfunction(factory):
        managed = contextlib.asynccontextmanager(factory)(*arguments)
        return await stack.enter_async_context(managed)
    if inspect.isgeneratorfunction(factory):
        # a sync factory's code runs in a thread, as a sync tool's does: it may block
        sync = contextlib.contextmanager(factory)(*arguments)
        value = await asyncio.to_thread(sync.__enter__)
        stack.push_async_exit(lambda *exc: asyncio.to_thread(sync.__exit__, *exc))
        return value
    if inspect.iscoroutinefunction(factory):
        made = await factory(*arguments)
    else:
        made = await asyncio.to_thread(factory, *arguments)
        if inspect.isawaitable(made):
            made = await made
    await _register(made, stack)
    return made


async def _register(made: Any, stack: contextlib.AsyncExitStack) -> None:
    if callable(getattr(made, "aclose", None)):
        stack.push_async_callback(made.aclose)
    elif callable(getattr(made, "close", None)):
        stack.push_async_callback(_close_sync, made)
    elif hasattr(made, "__aenter__") and hasattr(made, "__aexit__"):
        await stack.enter_async_context(made)
    elif hasattr(made, "__enter__") and hasattr(made, "__exit__"):
        await asyncio.to_thread(made.__enter__)
        stack.push_async_exit(lambda *exc: asyncio.to_thread(made.__exit__, *exc))


async def _close_sync(made: Any) -> None:
    result = await asyncio.to_thread(made.close)
    if inspect.isawaitable(result):
        await result
