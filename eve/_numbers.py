"""The number a setting's text says, for the settings read from the environment."""

from __future__ import annotations

import math

from eve.errors import ServerConfigError


def plain_float(raw: str) -> float:
    """``raw`` as a float, NaN when it is not a plain number: ``float`` alone also takes
    digits of other scripts (Arabic-Indic ones), and NaN fails every range check a caller makes."""
    if not raw.isascii():
        return math.nan
    try:
        return float(raw)
    except ValueError:
        return math.nan


def bounded_setting(name: str, raw: str, *, unit: str, most: float, note: str, off: bool) -> float:
    """``raw``, the setting ``name``'s value, as a number of ``unit`` above 0 and at most
    ``most``; ``ServerConfigError`` naming ``note`` (its default), and ``off`` where the
    setting also takes it, if it is not one."""
    value = plain_float(raw.strip())
    if not 0 < value <= most:  # NaN fails too
        raise ServerConfigError(
            f"{name} must be a number of {unit} above 0 and at most {most:g} ({note})"
            f"{' or off' if off else ''}, not {raw!r}"
        )
    return value
