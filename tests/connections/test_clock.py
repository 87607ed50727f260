"""The deadline of a connection's requests: it stops while paused, and pausing outside its
block (a person still signing in when a call has ended) changes nothing."""

from __future__ import annotations

import asyncio

import pytest

from eve.connections.clock import Deadline


async def test_the_deadline_raises_when_its_block_runs_too_long() -> None:
    with pytest.raises(TimeoutError):
        async with Deadline(0.05):
            await asyncio.Event().wait()


async def test_time_inside_a_pause_is_not_counted() -> None:
    clock = Deadline(0.1)
    async with clock:
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
    with pytest.raises(TimeoutError):
        async with clock:
            with clock.paused():
                await asyncio.sleep(0.15)
            # the clock runs again with what it had left, and runs out
            await asyncio.Event().wait()


async def test_a_pause_before_the_block_starts_it_stopped() -> None:
    clock = Deadline(0.05)
    clock.pause()
    async with clock:
        await asyncio.sleep(0.1)
        clock.resume()


async def test_a_pause_that_outlives_the_block_changes_nothing() -> None:
    clock = Deadline(1.0)
    async with clock:
        clock.pause()
    clock.resume()  # the block is over: nothing to reschedule
