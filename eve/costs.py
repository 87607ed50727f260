"""What tokens cost: a model call's price in USD from the ``genai-prices`` table, and sums.

Money is a ``Decimal`` and stays one: the table's prices are decimals per million tokens,
so a step's cost is exact, and so is any sum of them. In JSON it is a decimal string
(``"0.00855"``), which every language can read without rounding through a float.

A model the table does not know is *price unknown*, never 0: its ``Cost`` has no ``usd``
and names the model in ``unpriced``. A sum that holds both priced and unpriced calls keeps
the priced part in ``usd`` and the unpriced models in ``unpriced``, so it reads as "at
least". The offline models cost nothing by definition: 0 is their price, not a guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

import msgspec

from eve._usage import TokenUsage
from eve.manifest import ModelPrice

# TokenUsage is what ``price`` takes: re-exported so pricing needs one import
__all__ = ["Cost", "Spend", "TokenUsage", "price"]

#: model id prefixes that never cost money (eve's own deterministic models)
FREE_PROVIDERS = frozenset({"offline"})
#: eve's provider prefix → the provider id in genai-prices
PRICED_PROVIDERS = {
    "anthropic": "anthropic",
    "openai": "openai",
    "google": "google",
    "vertex": "google-vertex",
    # the table reads Bedrock ids with or without an inference profile's geography prefix
    "bedrock": "aws",
}


class Cost(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A cost in USD: exact, or unknown for some models, or both (then ``usd`` is a floor)."""

    #: the priced part, in USD (a decimal string in JSON); None when no call in it was priced
    #: (nothing at all when ``unpriced`` is empty too: ``Cost()`` is what nothing costs)
    usd: Decimal | None = None
    #: the models whose tokens are in the usage but not in ``usd`` (price unknown), sorted
    unpriced: list[str] = []

    @property
    def known(self) -> bool:
        """Whether ``usd`` is the whole cost (no model's price is unknown)."""
        return not self.unpriced

    def __add__(self, other: Cost) -> Cost:
        if self.usd is None or other.usd is None:
            usd = self.usd if other.usd is None else other.usd
        else:
            usd = self.usd + other.usd
        return Cost(usd=usd, unpriced=sorted({*self.unpriced, *other.unpriced}))

    def describe(self) -> str:
        """``$0.00855``, ``price unknown (plugin/x)`` or ``$0.01 + price unknown (plugin/x)``."""
        unknown = f"price unknown ({', '.join(self.unpriced)})" if self.unpriced else ""
        if self.usd is None:
            return unknown or "$0"
        money = f"${self.usd.normalize():f}" if self.usd else "$0"
        return f"{money} + {unknown}" if unknown else money


#: the price of a free model's call (an offline model's): known, and 0
ZERO = Cost(usd=Decimal(0))


class Spend(msgspec.Struct, frozen=True, kw_only=True):
    """Tokens and what they cost, together: a step's, a turn's, a session's, a subagent's."""

    usage: TokenUsage = TokenUsage()
    #: ``Cost()`` (nothing) to start: a sum of unknown prices only must not read as $0
    cost: Cost = Cost()

    def __add__(self, other: Spend) -> Spend:
        return Spend(usage=self.usage + other.usage, cost=self.cost + other.cost)


def declared_cost(declared: ModelPrice, usage: TokenUsage) -> Cost:
    """What ``usage`` costs at a price the author declared (``define_agent(model_prices=…)``)."""

    def rate(per_mtok: float | None) -> Decimal:
        # None: priced as input; str() keeps a float's shortest spelling (0.1, not its
        # binary expansion), so the cost stays exact
        given = declared.input_per_mtok if per_mtok is None else per_mtok
        return Decimal(str(given)) / 1_000_000

    usd = (
        usage.input_tokens * rate(declared.input_per_mtok)
        + usage.cache_read_tokens * rate(declared.cache_read_per_mtok)
        + usage.cache_write_tokens * rate(declared.cache_write_per_mtok)
        + usage.output_tokens * rate(declared.output_per_mtok)
    )
    return Cost(usd=usd)


def price(
    model_id: str, usage: TokenUsage, declared: Mapping[str, ModelPrice] | None = None
) -> Cost:
    """What ``usage`` of ``model_id`` (``anthropic/claude-sonnet-4-5``) costs.

    The genai-prices table counts every input token in ``input_tokens`` and the cached ones
    again apart (cheaper to read, dearer to write); eve's ``input_tokens`` are the uncached
    ones, so the table gets their sum. Reasoning tokens are output tokens and priced as
    such. A model with no price (not in the table, a plugin's, a test double) is unknown,
    unless the agent ``declared`` one (a local model's), which replaces the table's.
    """
    if declared and model_id in declared:
        return declared_cost(declared[model_id], usage)
    provider, _, name = model_id.partition("/")
    if provider in FREE_PROVIDERS:
        return ZERO
    table_provider = PRICED_PROVIDERS.get(provider)
    if table_provider is None or not name:
        return Cost(unpriced=[model_id])
    # imported here: the table loads on the first priced call, not on `eve --help`
    import genai_prices

    table_usage = genai_prices.Usage(
        input_tokens=usage.total_input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
    )
    try:
        calculation = genai_prices.calc_price(table_usage, name, provider_id=table_provider)
    except (LookupError, ValueError):
        # LookupError: the table has no such model; ValueError: it cannot price this usage
        return Cost(unpriced=[model_id])
    return Cost(usd=calculation.total_price)


def table_version() -> str:
    """The genai-prices release whose table prices this process's calls."""
    import genai_prices

    return str(genai_prices.__version__)
