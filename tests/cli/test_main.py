"""The eve group itself: every command listed, and none of them imported to list it."""

from __future__ import annotations

import subprocess
import sys

from click.testing import CliRunner

from eve.cli import main
from eve.cli.main import _COMMANDS


def test_help_lists_every_command_without_importing_them() -> None:
    code = (
        "import sys\n"
        "from eve.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('pydantic', 'eve.compiler', 'anthropic', 'openai') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert "HEAVY []" in out
    for name in ("compile", "dev", "info", "run"):
        assert f"  {name}  " in out


def test_every_listed_command_loads() -> None:
    runner = CliRunner()
    for name in _COMMANDS:
        result = runner.invoke(main, [name, "--help"])
        assert result.exit_code == 0, result.output
        assert "Usage: main " + name in result.output or f"Usage: eve {name}" in result.output
    assert runner.invoke(main, ["nope"]).exit_code == 2
