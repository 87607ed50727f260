"""The shop's catalog: a module-level constant, which is fine (it never changes)."""

PRICES: dict[str, float] = {
    "hammer": 12.5,
    "screwdriver": 4.25,
    "wrench": 9.0,
}

CURRENCY = "EUR"


def price_of(item: str) -> float | None:
    return PRICES.get(item.strip().lower())
