"""The compute permits: first come, first served, and a waiter that is cancelled gives up its
place (or the permit it was just handed) without a permit lost or counted twice."""

from __future__ import annotations

import asyncio

from eve.sessions.compute_gate import ComputeGate


async def _hold(gate: ComputeGate, name: str, order: list[str], release: asyncio.Event) -> None:
    async with gate.held():
        order.append(name)
        await release.wait()


def test_permits_go_to_waiters_in_the_order_they_came() -> None:
    async def run() -> tuple[list[str], list[int]]:
        gate, order, release = ComputeGate(2), [], asyncio.Event()
        tasks = [asyncio.create_task(_hold(gate, str(i), order, release)) for i in range(5)]
        await asyncio.sleep(0)
        seen = [gate.busy, gate.waiting]
        release.set()
        await asyncio.gather(*tasks)
        return order, [*seen, gate.busy, gate.waiting]

    order, counts = asyncio.run(run())
    assert order == ["0", "1", "2", "3", "4"]
    assert counts == [2, 3, 0, 0]


def test_a_cancelled_waiter_leaves_the_queue_and_a_handed_permit_goes_on() -> None:
    async def run() -> tuple[list[str], list[int]]:
        gate, order, release = ComputeGate(1), [], asyncio.Event()
        holder = asyncio.create_task(_hold(gate, "holder", order, release))
        await asyncio.sleep(0)
        gone = asyncio.create_task(_hold(gate, "gone", order, release))
        handed = asyncio.create_task(_hold(gate, "handed", order, release))
        last = asyncio.create_task(_hold(gate, "last", order, release))
        await asyncio.sleep(0)
        gone.cancel()  # while waiting: it leaves the queue
        await asyncio.sleep(0)
        counts = [gate.waiting]
        release.set()
        await asyncio.sleep(0)  # the holder ends and hands its permit to "handed"...
        handed.cancel()  # ...which is cancelled before it runs: "last" gets the permit
        async with asyncio.timeout(10):  # a permit lost would leave "last" waiting for ever
            await asyncio.gather(holder, gone, handed, last, return_exceptions=True)
        return order, [*counts, gate.busy, gate.waiting]

    order, counts = asyncio.run(run())
    assert order == ["holder", "last"]
    assert counts == [2, 0, 0]
