"""The number a setting's text says, for the settings read from the environment."""

from __future__ import annotations

import math


def plain_float(raw: str) -> float:
    """``raw`` as a float, NaN when it is not a plain number: ``float`` alone also takes
    digits of other scripts (Arabic-Indic ones), and NaN fails every range check a caller makes."""
    if not raw.isascii():
        return math.nan
    try:
        return float(raw)
    except ValueError:
        return math.nan
