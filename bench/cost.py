"""What prompt caching saves on Anthropic: billed input tokens of a tool loop, cached or not.

eve's ``run_agent`` drives the real ``AnthropicModel`` (the official SDK, real HTTP) against
the loopback Messages API of the tests (``tests/models/anthropic_server.py``), which accounts
the prompt cache as the API documents it: a write of the prefix up to a breakpoint, a read
when a later request's breakpoint ends a prefix written within the TTL, nothing below the
model's minimum cacheable length (1,024 tokens for Claude Sonnet 4.5), about 4 characters
per token. Each step's tool returns a realistic payload (a page of order records as JSON).

Billed input tokens weigh each kind by Anthropic's price ratios (Anthropic, "Prompt caching",
"Pricing": a 5-minute cache write costs 1.25x the base input price, a read 0.1x):
``input + 1.25 x cache_write + 0.1 x cache_read``, from the usage eve reports
(``RunResult.usage``). Target: with caching at most 0.35x without, on the 10-step loop.

Run alone with ``python -m bench.cost [--quick]``; results land in ``bench/results/cost.*``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench._machine import machine_info, package_version

MODEL = "claude-sonnet-4-5"
WRITE_PRICE, READ_PRICE = 1.25, 0.1
STEPS = (10, 50)
TARGET_STEPS, TARGET_RATIO = 10, 0.35
RESULTS_DIR = Path(__file__).parent / "results"

_POLICY = (
    "When a customer asks about an order, look it up before answering; never guess a status. "
    "Quote amounts with their currency, dates as YYYY-MM-DD, and name the carrier for shipped "
    "orders. Refunds above 200 EUR need a supervisor: say so and open a ticket. Keep answers "
    "short, in the customer's language, and end with the next step the customer can take. "
)
SYSTEM = "You are the order-support agent of a mid-sized online shop.\n\n" + "\n".join(
    f"Rule {n}. {_POLICY}" for n in range(1, 19)
)


def _orders_page(query: str, step: int) -> str:
    """A page of order records, the size a real order search returns (about 900 tokens)."""
    orders = [
        {
            "order_id": f"ORD-{step:03d}-{n:02d}",
            "customer": {"name": f"Customer {n}", "email": f"customer{n}@example.com"},
            "status": ["processing", "shipped", "delivered", "refunded"][n % 4],
            "placed_at": f"2026-11-{(n % 28) + 1:02d}",
            "total": {"amount": 19.99 * (n + 1), "currency": "EUR"},
            "items": [
                {"sku": f"SKU-{n}{k}", "title": f"Item {k} of order {n}", "quantity": k + 1}
                for k in range(3)
            ],
            "carrier": "DHL" if n % 2 else "UPS",
            "note": f"matches {query!r}",
        }
        for n in range(8)
    ]
    return json.dumps({"query": query, "page": 1, "orders": orders})


async def _run_loop(steps: int, *, cached: bool) -> dict[str, Any]:
    from eve.execution import agent_setup, run_agent
    from eve.manifest import AgentConfig, PromptCache
    from eve.models.anthropic import AnthropicModel
    from eve.tools import tool
    from tests.execution.helpers import live
    from tests.models.anthropic_server import AnthropicServer, Turn

    @tool
    def search_orders(query: str, step: int) -> str:
        """Search the shop's orders by customer, order id or item; returns a page of orders."""
        return _orders_page(query, step)

    def respond(body: dict[str, Any]) -> Turn:
        step = sum(m["role"] == "assistant" for m in body["messages"])
        if step >= steps - 1:
            return Turn([{"type": "text", "text": "All orders checked."}], "end_turn")
        call = {
            "type": "tool_use",
            "id": f"toolu_{step}",
            "name": "search_orders",
            "input": {"query": f"customer {step}", "step": step},
        }
        return Turn([{"type": "text", "text": f"Checking batch {step}."}, call], "tool_use")

    with AnthropicServer() as server:
        server.script(*[respond] * steps)
        client = AnthropicModel(MODEL, api_key="bench-key", base_url=server.url)
        setup = agent_setup(
            client, instructions=SYSTEM, tools=[live("search_orders", search_orders)]
        )
        config = AgentConfig(prompt_cache=PromptCache(enabled=cached))
        setup = replace(setup, agent=replace(setup.agent, config=config), max_turns=steps + 5)
        result = await run_agent(setup, "Check every open order of this week.")
        served = list(server.usages)
    usage = result.usage
    if len(served) != steps or result.final_text != "All orders checked.":
        raise AssertionError(f"{len(served)} requests, final {result.final_text!r}")
    billed = (
        usage.input_tokens
        + WRITE_PRICE * usage.cache_write_tokens
        + READ_PRICE * usage.cache_read_tokens
    )
    return {
        "input_tokens": usage.input_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "total_input_tokens": usage.total_input_tokens,
        "billed_input_tokens": round(billed, 1),
    }


async def _measure(step_counts: tuple[int, ...]) -> list[dict[str, Any]]:
    rows = []
    for steps in step_counts:
        without = await _run_loop(steps, cached=False)
        with_cache = await _run_loop(steps, cached=True)
        ratio = with_cache["billed_input_tokens"] / without["billed_input_tokens"]
        rows.append(
            {"steps": steps, "without": without, "with": with_cache, "ratio": round(ratio, 3)}
        )
    return rows


def run(*, quick: bool = False) -> dict[str, Any]:

    rows = asyncio.run(_measure(STEPS[:1] if quick else STEPS))
    target = next(r for r in rows if r["steps"] == TARGET_STEPS)
    results = {
        "benchmark": "cost",
        "model": MODEL,
        "prices": {"input": 1.0, "cache_write_5m": WRITE_PRICE, "cache_read": READ_PRICE},
        "rows": rows,
        "target": {"steps": TARGET_STEPS, "max_ratio": TARGET_RATIO},
        "met": target["ratio"] <= TARGET_RATIO,
        "machine": machine_info(),
        "versions": {"eve": package_version("eve"), "anthropic": package_version("anthropic")},
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    print(_markdown(results))
    if not quick:
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        (RESULTS_DIR / "cost.json").write_text(json.dumps(results, indent=2) + "\n")
        (RESULTS_DIR / "cost.md").write_text(_markdown(results))
    return results


def _markdown(results: dict[str, Any]) -> str:
    lines = [
        "# Prompt caching: billed input tokens of an Anthropic tool loop",
        "",
        f"`{results['model']}` through eve's `AnthropicModel` against the loopback Messages API; "
        "each step calls a tool that returns a page of orders (about 900 tokens; the system "
        "prompt about 1,600). Billed = "
        "input + 1.25 x cache write + 0.1 x cache read (Anthropic's 5-minute cache prices).",
        "",
        "| steps | billed without cache | billed with cache | with ÷ without | "
        "cache write | cache read | uncached input |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in results["rows"]:
        cached = row["with"]
        lines.append(
            f"| {row['steps']} | {row['without']['billed_input_tokens']:,.0f} "
            f"| {cached['billed_input_tokens']:,.0f} | {row['ratio']:.3f} "
            f"| {cached['cache_write_tokens']:,} | {cached['cache_read_tokens']:,} "
            f"| {cached['input_tokens']:,} |"
        )
    target = results["target"]
    verdict = "met" if results["met"] else "missed"
    lines += [
        "",
        f"Target (with caching at most {target['max_ratio']} x without on the "
        f"{target['steps']}-step loop): **{verdict}**.",
        "",
        f"eve {results['versions']['eve']}, anthropic {results['versions']['anthropic']}; "
        f"{results['date']}.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    run(quick="--quick" in sys.argv[1:])
