"""``--principal KIND:ID``: the principal an operator's command acts as (``eve memory``,
``eve sessions fork``)."""

from __future__ import annotations

import click

from eve.auth.principal import OPERATOR, Principal

_PRINCIPAL_KINDS = ("user", "channel", "operator")


def parse_principal(raw: str | None, *, option: str = "--principal") -> Principal:
    """``user:<id>`` (or ``channel:<id>``, ``operator:<id>``) as a principal; the operator
    when the option is not given."""
    if raw is None:
        return OPERATOR
    kind, sep, id = raw.partition(":")
    if not sep or not id or kind not in _PRINCIPAL_KINDS:
        raise click.BadParameter(
            f"{raw!r}: KIND:ID with KIND one of {', '.join(_PRINCIPAL_KINDS)} "
            "(e.g. user:https://issuer.example#alice)",
            param_hint=option,
        )
    return Principal(id=id, kind=kind)  # type: ignore[arg-type]
