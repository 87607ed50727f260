"""eve init: a new app that compiles, runs offline and passes its own eval out of the box."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from eve._scaffold import template_files
from eve.artifacts import check_artifacts
from eve.cli import main

REPO = Path(__file__).resolve().parents[2]


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_a_new_app_compiles_runs_offline_and_passes_its_eval(tmp_path: Path) -> None:
    app = tmp_path / "desk"
    code, out, err = invoke("init", str(app))
    assert code == 0, err
    assert "wrote 6 files" in out and "eve run" in out
    written = sorted(
        p.relative_to(app).as_posix()
        for p in app.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts  # the compile's own bytecode
    )
    assert [p for p in written if not p.startswith(".eve/")] == [
        ".gitignore",
        "README.md",
        "agent/agent.py",
        "agent/evals/orders.py",
        "agent/instructions.md",
        "agent/tools/lookup_order.py",
    ]
    assert check_artifacts(app).fresh  # compiled by init: `eve compile --check` passes
    assert ".eve/sessions/" in (app / ".gitignore").read_text()

    # no key: the offline model, and it says so; its sample input is the tool's example
    code, out, err = invoke("-C", str(app), "run", "--json", "Where is A-1001?")
    assert code == 0, err
    assert "using the offline model" in err
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    results = [e["data"] for e in events if e["type"] == "action.result"]
    assert [(r["name"], r["status"]) for r in results] == [("lookup_order", "completed")], results
    assert '"status":"shipped"' in results[0]["output"].replace(" ", "")

    code, out, err = invoke("-C", str(app), "eval")
    assert code == 0, out + err
    assert "1/1 case(s) passed" in err


def test_init_example_copies_the_example_agent(tmp_path: Path) -> None:
    code, _, err = invoke("init", "--example", str(tmp_path / "shop"))
    assert code == 0, err
    shop = tmp_path / "shop"
    for path in ["agent/tools/place_order.py", "agent/subagents/researcher/agent.py"]:
        assert (shop / path).read_bytes() == (REPO / path).read_bytes()
    # its MCP connection starts this server from the app root
    assert (shop / "examples/units_server.py").is_file()
    # what was copied: the template's files, none of the repo's bytecode
    copied = {f.path for f in template_files("example")}
    assert not [p for p in copied if "__pycache__" in p or p.endswith(".pyc")]
    assert {"agent/tools/place_order.py", "examples/units_server.py"} <= copied
    assert check_artifacts(shop).fresh


def test_init_overwrites_nothing(tmp_path: Path) -> None:
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent/agent.py").write_text("mine = 1\n")
    (tmp_path / "README.md").write_text("my readme\n")
    code, _, err = invoke("init", str(tmp_path))
    assert code == 2
    assert "would overwrite README.md, agent/agent.py" in err
    assert (tmp_path / "agent/agent.py").read_text() == "mine = 1\n"
    assert not (tmp_path / "agent/tools").exists()  # nothing of the template was written


@pytest.mark.parametrize("template", ["app", "example"])
def test_templates_hold_no_compiled_or_generated_files(template: str) -> None:
    paths = [f.path for f in template_files(template)]  # type: ignore[arg-type]
    assert not [p for p in paths if p.endswith(".pyc") or p.startswith(".eve/")]
