"""The deadline of a connection's requests: it stops while paused, and pausing outside its
block (a person still signing in when a call has ended) changes nothing."""

from __future__ import annotations

import asyncio

import pytest

from eve.connections.clock import Deadline


async def test_the_deadline_raises_when_its_block_runs_too_long() -> None:
    with pytest.raises(TimeoutError), Deadline(0.05):
        await asyncio.Event().wait()


async def test_time_inside_a_pause_is_not_counted() -> None:
    clock = Deadline(0.1)
    with clock:
        with clock.paused():
            await asyncio.sleep(0.2)
        # nested and overlapping pauses hold it until the last ends
        clock.pause()
        clock.pause()
        clock.resume()
        await asyncio.sleep(0.15)
        clock.resume()


async def test_the_time_left_is_kept_across_a_pause() -> None:
    clock = Deadline(0.1)
    with pytest.raises(TimeoutError), clock:
        with clock.paused():
            await asyncio.sleep(0.15)
        # the clock runs again with what it had left, and runs out
        await asyncio.Event().wait()


async def test_a_renewed_clock_starts_again_with_its_whole_time() -> None:
    loop, clock = asyncio.get_running_loop(), Deadline(10.0)
    with clock:
        await asyncio.sleep(0.05)
        with clock.paused():
            clock.renew()  # a sign-in: the refused request is sent again afterwards
            before_start = loop.time()
        # 10 s from when it started again, not the 9.95 s or less it had left; measured from
        # a time read before it started, so a stall of a loaded machine cannot shorten it
        assert clock.when is not None and clock.when >= before_start + 10.0


async def test_a_pause_before_the_block_starts_it_stopped() -> None:
    clock = Deadline(0.05)
    clock.pause()
    with clock:
        await asyncio.sleep(0.1)
        clock.resume()


async def test_a_pause_that_outlives_the_block_changes_nothing() -> None:
    clock = Deadline(1.0)
    with clock:
        clock.pause()
    clock.resume()  # the block is over: nothing to reschedule


async def test_the_loops_deadlines_share_a_timer_and_each_runs_out_on_its_own() -> None:
    async def bounded(clock: Deadline) -> None:
        with clock:
            await asyncio.Event().wait()

    slow = asyncio.create_task(bounded(Deadline(30.0)))
    await asyncio.sleep(0)  # its block started: the shared timer is set 30 s ahead
    with pytest.raises(TimeoutError):
        await bounded(Deadline(0.05))  # an earlier deadline brings the timer forward
    assert not slow.done(), "the other deadline is not over"
    # a cancellation from outside stays a cancellation, not a timeout
    slow.cancel()
    with pytest.raises(asyncio.CancelledError):
        await slow
