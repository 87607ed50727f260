"""``always(by=...)`` and ``once(by=...)``: a role that may answer, checked when the tool's
module is compiled."""

from __future__ import annotations

import pytest

from eve.authoring.approval import role_of
from eve.compiler import compile_agent
from eve.errors import AuthoringError
from eve.tools.approval import always, once
from tests.conftest import AppFactory


def test_by_names_a_role() -> None:
    assert always(by="role:finance").by == "role:finance"
    assert once(by="role:ops/eu-1").by == "role:ops/eu-1"
    assert always().by is None
    assert role_of("role:finance") == "finance" and role_of("finance") is None


@pytest.mark.parametrize("by", ["finance", "role:", "role:two words", "user:alice", ""])
def test_a_by_that_names_no_role_is_refused_with_the_form_to_write(by: str) -> None:
    with pytest.raises(AuthoringError, match=r"write by='role:<name>'"):
        always(by=by)


def test_a_tool_with_a_bad_by_is_a_compile_diagnostic_at_its_line(make_app: AppFactory) -> None:
    tool = (
        "from eve.tools import tool\n"
        "from eve.tools.approval import always\n"
        "@tool(approval=always(by='finance'))\n"
        "def pay(amount: int) -> str:\n"
        "    '''Pay.'''\n"
        "    return 'paid'\n"
    )
    result = compile_agent(make_app({"agent/tools/pay.py": tool}))
    [diagnostic] = result.diagnostics.items
    assert (diagnostic.code, diagnostic.source_path, diagnostic.line) == (
        "compile/import-failed",
        "agent/tools/pay.py",
        3,
    )
    assert "by='finance' names no role" in diagnostic.message
