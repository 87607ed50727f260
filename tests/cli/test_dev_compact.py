"""``/compact`` in ``eve dev``: the older history is folded now, and dev says so."""

from __future__ import annotations

from tests.cli.test_dev_cli import piped
from tests.conftest import AppFactory

WORDS = "lorem ipsum dolor sit amet " * 20


def test_compact_folds_the_history_and_the_conversation_goes_on(make_app: AppFactory) -> None:
    # offline/test without tools (it echoes what it was told), in a small window
    agent = """
        from eve import define_agent
        default = define_agent(model="offline/test", model_context_window_tokens=2000)
    """
    root = make_app({"agent/agent.py": agent})
    said = "".join(f"message {n} {WORDS}\n" for n in range(3))
    out, err = piped(root, said + "/compact\nand now?\n/exit\n")
    assert "You said: and now?\n" in out
    [line] = [x for x in err.splitlines() if "⇣ compacted " in x]
    folded = int(line.split("⇣ compacted ")[1].split(" ")[0])
    assert folded > 0, line
