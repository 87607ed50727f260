"""A worker's loop runs what serves a request before the turns' work, which runs whole and
in order in slices (``eve/server/serving_loop.py``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from eve.server.serving import SERVING, answered, serving_context
from eve.server.serving_loop import ServingLoop, new_serving_loop


@pytest.fixture
def loop() -> Any:
    made = new_serving_loop()
    assert isinstance(made, ServingLoop)
    yield made
    made.close()


def test_a_request_runs_before_the_turns_work_waiting_and_that_work_runs_in_order(
    loop: ServingLoop,
) -> None:
    loop.slice_seconds = 0.0  # a slice runs one callback
    ran: list[str] = []

    async def main() -> None:
        for n in range(5):
            loop.call_soon(ran.append, f"turn {n}")
        serving_context().run(loop.call_soon, ran.append, "request")
        done = loop.create_future()
        loop.call_soon(done.set_result, None)
        await done

    loop.run_until_complete(main())
    # the request's callback was scheduled last and ran first; the turns' in order after it
    assert ran == ["request", "turn 0", "turn 1", "turn 2", "turn 3", "turn 4"]
    assert loop.slices >= 5


def test_a_request_task_and_what_it_awaits_go_first_until_it_is_answered(
    loop: ServingLoop,
) -> None:
    async def request() -> tuple[bool, bool]:
        serving = SERVING.get()
        assert serving is not None
        await asyncio.sleep(0)  # its steps are scheduled as serving
        before = serving.urgent
        answered()
        return before, serving.urgent

    async def main() -> tuple[bool, bool]:
        deferred_before = loop.deferred
        task = loop.create_task(request(), context=serving_context())
        result = await task
        # the task's steps were not deferred; this coroutine's own wake-up was
        assert loop.deferred - deferred_before == 1
        return result

    assert loop.run_until_complete(main()) == (True, False)


def test_a_deferred_callback_can_be_cancelled_and_its_error_is_reported(
    loop: ServingLoop,
) -> None:
    ran: list[str] = []
    errors: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: errors.append(context))

    def fail() -> None:
        raise LookupError("in a callback")

    async def main() -> None:
        loop.call_soon(ran.append, "cancelled").cancel()
        loop.call_soon(fail)
        loop.call_soon(ran.append, "after")
        await asyncio.sleep(0.01)

    loop.run_until_complete(main())
    assert ran == ["after"]
    assert [type(e.get("exception")) for e in errors] == [LookupError]
