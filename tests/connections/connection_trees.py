"""An agent tree of connection files (and stub tools) for the compile tests."""

from __future__ import annotations

from pathlib import Path


def app(tmp_path: Path, connections: dict[str, str], tools: tuple[str, ...] = ()) -> Path:
    """An app root whose agent has ``connections`` (file name to source) and empty tools."""
    agent = tmp_path / "agent"
    (agent / "connections").mkdir(parents=True)
    (agent / "instructions.md").write_text("Help.\n")
    for name, source in connections.items():
        (agent / "connections" / name).write_text(source)
    if tools:
        (agent / "tools").mkdir()
    for tool in tools:
        (agent / "tools" / f"{tool}.py").write_text(
            "from eve.tools import tool\n\n@tool\ndef t() -> str:\n    '''T.'''\n    return ''\n"
        )
    return tmp_path
