"""ContextKey registry, the active context and define_state."""

from __future__ import annotations

import importlib
import re
import shutil
import sys
from pathlib import Path

import pytest

from eve.auth.principal import OPERATOR, Principal
from eve.context import (
    JSON_CODEC,
    ContextKey,
    EveContext,
    current_principal,
    define_state,
    use_context,
)
from eve.errors import AuthoringError, ContextKeyCollision, NoActiveContext
from tests.conftest import REPO_ROOT


def test_same_codec_presence_may_register_again() -> None:
    first = ContextKey("test.reload", codec=JSON_CODEC)
    again = ContextKey("test.reload", codec=JSON_CODEC)
    assert first.name == again.name
    plain = ContextKey("test.plain")
    assert ContextKey("test.plain").codec is plain.codec is None


def test_codec_presence_collision_explains_the_risk() -> None:
    ContextKey("test.collide", codec=JSON_CODEC)
    with pytest.raises(ContextKeyCollision, match="silently break serialization"):
        ContextKey("test.collide")


def test_keys_need_an_active_context() -> None:
    key: ContextKey[int] = ContextKey("test.active")
    with pytest.raises(NoActiveContext, match="No active eve context"):
        key.get(0)
    with use_context(EveContext(session_id="s1")):
        key.set(5)
        assert key.get() == 5
    with pytest.raises(NoActiveContext):
        key.set(1)


def test_state_is_per_context_and_starts_from_a_copy() -> None:
    notes = define_state("test.notes", [])
    one, two = EveContext(session_id="one"), EveContext(session_id="two")
    with use_context(one):
        notes.update(lambda items: [*items, "a"])
        notes.get().append("b")
    with use_context(two):
        assert notes.get() == []
    with use_context(one):
        assert notes.get() == ["a", "b"]
    assert one.snapshot() == {"state:test.notes": ["a", "b"]}


def test_state_outside_a_context_raises() -> None:
    counter = define_state("test.outside", 0)
    with pytest.raises(NoActiveContext):
        counter.get()


def test_reserved_state_names() -> None:
    with pytest.raises(AuthoringError, match="reserved"):
        define_state("eve.internal", 0)


def test_restore_drops_unknown_keys_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    define_state("test.kept", 0)
    context = EveContext(session_id="s")
    context.restore({"state:test.kept": 3, "state:gone": 1})
    assert context.values == {"state:test.kept": 3}
    assert "dropping unknown context key 'state:gone'" in caplog.text


def test_registry_is_shared_by_a_second_copy_of_eve(tmp_path: Path) -> None:
    # A vendored copy under another package name must see the keys of the original.
    copy = tmp_path / "eve_vendored"
    shutil.copytree(REPO_ROOT / "eve", copy, ignore=shutil.ignore_patterns("__pycache__"))
    for path in copy.rglob("*.py"):
        text = path.read_text()
        path.write_text(
            re.sub(r"\beve\.", "eve_vendored.", text).replace(
                "from eve import", "from eve_vendored import"
            )
        )
    sys.path.insert(0, str(tmp_path))
    try:
        vendored = importlib.import_module("eve_vendored.context")
        assert vendored.ContextKey is not ContextKey
        ContextKey("test.shared", codec=JSON_CODEC)
        with pytest.raises(vendored_error(), match="already registered with a codec"):
            vendored.ContextKey("test.shared")
        key = vendored.ContextKey("test.shared.value")
        with use_context(EveContext(session_id="x")):
            key.set("seen by both")
            assert ContextKey("test.shared.value").get() == "seen by both"
    finally:
        for name in [n for n in sys.modules if n.startswith("eve_vendored")]:
            del sys.modules[name]


def vendored_error() -> type[Exception]:
    errors = importlib.import_module("eve_vendored.errors")
    error: type[Exception] = errors.ContextKeyCollision
    return error


def test_the_principal_of_a_context_is_the_operator_unless_a_server_verified_one() -> None:
    with pytest.raises(NoActiveContext, match="current_principal"):
        current_principal()
    with use_context(EveContext(session_id="local")):  # eve run, eve dev
        assert current_principal() == OPERATOR
    alice = Principal(id="alice", kind="user", claims={"roles": "finance"})
    with use_context(EveContext(session_id="s", principal=alice)):
        assert current_principal().roles == {"finance"}
