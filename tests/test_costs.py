"""Pricing a model call: priced models, the offline ones (free), unknown ones, cache and sums."""

from __future__ import annotations

from decimal import Decimal

import msgspec

from eve._usage import TokenUsage
from eve.costs import ZERO, Cost, Spend, price

MILLION = 1_000_000


def test_a_priced_model_costs_its_table_price_exactly() -> None:
    # claude-sonnet-4-5: $3 per million input tokens, $15 per million output tokens
    cost = price("anthropic/claude-sonnet-4-5", TokenUsage(input_tokens=100_000, output_tokens=1))
    assert cost == Cost(usd=Decimal("0.300015"))
    assert cost.known and cost.describe() == "$0.300015"
    # past 200k input tokens the table's long-context tier applies: $6 and $22.50
    long = price("anthropic/claude-sonnet-4-5", TokenUsage(input_tokens=MILLION, output_tokens=1))
    assert long == Cost(usd=Decimal("6.0000225"))
    gpt = price("openai/gpt-4.1", TokenUsage(input_tokens=1000, output_tokens=100))
    assert gpt.usd == Decimal("0.0028")  # $2 in, $8 out per million


def test_cached_tokens_cost_the_cache_prices_not_the_input_price() -> None:
    # cache reads $0.30, cache writes $3.75 per million: not the $3 of an uncached token
    usage = TokenUsage(
        input_tokens=1000, output_tokens=100, cache_read_tokens=1000, cache_write_tokens=1000
    )
    cost = price("anthropic/claude-sonnet-4-5", usage)
    assert cost.usd == Decimal("0.003") + Decimal("0.0003") + Decimal("0.00375") + Decimal("0.0015")
    uncached = price(
        "anthropic/claude-sonnet-4-5", TokenUsage(input_tokens=3000, output_tokens=100)
    )
    assert cost.usd is not None and uncached.usd is not None and cost.usd < uncached.usd


def test_reasoning_tokens_are_priced_once_as_output() -> None:
    plain = price("openai/gpt-4.1", TokenUsage(output_tokens=100))
    reasoned = price("openai/gpt-4.1", TokenUsage(output_tokens=100, reasoning_tokens=60))
    assert plain == reasoned


def test_an_unknown_model_is_price_unknown_never_zero() -> None:
    for model_id in ("anthropic/claude-no-such-model", "acme/large", "function"):
        cost = price(model_id, TokenUsage(input_tokens=10, output_tokens=10))
        assert cost == Cost(unpriced=[model_id])
        assert cost.usd is None and not cost.known
        assert cost.describe() == f"price unknown ({model_id})"


def test_the_offline_models_cost_nothing_by_definition() -> None:
    for model_id in ("offline/test", "offline/script:script.json"):
        cost = price(model_id, TokenUsage(input_tokens=10, output_tokens=10))
        assert cost == ZERO and cost.known and cost.describe() == "$0"


def test_a_sum_keeps_the_priced_part_and_names_the_unpriced_models() -> None:
    known = Cost(usd=Decimal("0.5"))
    assert known + ZERO == known and known + Cost() == known
    assert Cost().describe() == "$0" and Cost().known  # nothing spent
    assert (Cost() + Cost(unpriced=["x"])).usd is None  # not "$0 + unknown"
    mixed = known + Cost(unpriced=["acme/large"]) + Cost(unpriced=["acme/large"])
    assert mixed == Cost(usd=Decimal("0.5"), unpriced=["acme/large"])
    assert mixed.describe() == "$0.5 + price unknown (acme/large)"
    assert Cost(unpriced=["b"]) + Cost(unpriced=["a"]) == Cost(unpriced=["a", "b"])


def test_money_is_a_decimal_string_on_the_wire_and_round_trips_exactly() -> None:
    spend = Spend(usage=TokenUsage(input_tokens=1), cost=Cost(usd=Decimal("0.000003")))
    wire = msgspec.json.encode(spend)
    assert b'"usd":"0.000003"' in wire
    assert msgspec.json.decode(wire, type=Spend) == spend
    unknown = msgspec.json.encode(Cost(unpriced=["acme/large"]))
    assert unknown == b'{"unpriced":["acme/large"]}'  # no usd at all: not 0
