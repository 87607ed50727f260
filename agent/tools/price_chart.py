"""Show the catalog's prices as a bar chart: a tool that returns an image.

A tool returns an ``ImagePart`` (alone, or in a list with text) and the model receives an
image, not a JSON string; offline models acknowledge it with its type and size.
"""

from typing import Annotated

from pydantic import Field

from agent.lib.catalog import CURRENCY, PRICES
from agent.lib.png import Pixel, encode_png
from eve.messages import ImagePart
from eve.tools import tool

WHITE: Pixel = (255, 255, 255)
GREY: Pixel = (160, 160, 160)
ORANGE: Pixel = (230, 120, 20)
BAR, GAP, HEIGHT, SCALE = 12, 4, 64, 4  # pixels; a euro is SCALE pixels tall


def chart(highlight: str) -> bytes:
    """Bars in catalog order, ``highlight``'s in orange, on a white background."""
    colours = [ORANGE if item == highlight else GREY for item in PRICES]
    tops = [HEIGHT - min(HEIGHT, round(price * SCALE)) for price in PRICES.values()]
    width = len(PRICES) * (BAR + GAP) + GAP
    rows = []
    for y in range(HEIGHT):
        row = [WHITE] * width
        for index, (colour, top) in enumerate(zip(colours, tops, strict=True)):
            if y >= top:
                left = GAP + index * (BAR + GAP)
                row[left : left + BAR] = [colour] * BAR
        rows.append(row)
    return encode_png(rows)


@tool
def price_chart(
    item: Annotated[str, Field(examples=["hammer"])],
) -> list[str | ImagePart]:
    """Show a bar chart of the catalog's prices with one item highlighted."""
    highlighted = item.strip().lower()
    items = ", ".join(f"{name} {price:g}" for name, price in PRICES.items())
    return [
        f"Prices in {CURRENCY}: {items}; {highlighted} is the orange bar.",
        ImagePart(media_type="image/png", data=chart(highlighted)),
    ]
