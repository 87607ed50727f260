"""The loop's PostgreSQL calls pass their parameters by name in the order of the function's
``CALL_PARAMS``, which must name exactly the call's ``$n`` placeholders."""

from __future__ import annotations

import re

import pytest

from eve.sessions import pg_claim_sql, pg_create_sql
from eve.sessions.pg_claim_now import encoded


@pytest.mark.parametrize("module", [pg_claim_sql, pg_create_sql], ids=lambda m: m.NAME)
def test_each_placeholder_has_one_named_parameter(module: object) -> None:
    call: bytes = module.CALL
    names: tuple[str, ...] = module.CALL_PARAMS
    placeholders = sorted({int(n) for n in re.findall(rb"\$(\d+)", call)})
    assert placeholders == list(range(1, len(names) + 1))
    assert len(set(names)) == len(names)


def test_parameters_are_encoded_in_the_calls_order_and_must_all_be_given() -> None:
    order = ("b", "a", "c")
    assert encoded({"a": "1", "b": None, "c": "é"}, order) == [None, b"1", "é".encode()]
    with pytest.raises(ValueError, match="not the call's"):
        encoded({"a": "1", "b": "2"}, order)
