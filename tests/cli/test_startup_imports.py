"""What the fast paths import: ``eve compile --check`` and ``eve run`` on fresh artifacts.

Each command runs in a fresh interpreter that then reports which modules it loaded. Sets of
modules, not times: how long they take is measured by ``bench/startup.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from eve.compiler import compile_to_disk
from tests.conftest import AppFactory

TOOL = """
from eve.tools import tool

@tool
def add(a: int, b: int) -> int:
    '''Add two numbers.'''
    return a + b
"""

# Runs the command in this interpreter, then prints the modules it loaded as one JSON line.
REPORT_MODULES = """
import json, sys
from eve.cli import main
try:
    main(sys.argv[1:])
except SystemExit as done:
    code = done.code
print(json.dumps({"exit": code, "modules": sorted(sys.modules)}))
"""


def loaded_modules(root: Path, *args: str) -> tuple[object, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", REPORT_MODULES, "-C", str(root), *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    report = json.loads(done.stdout.splitlines()[-1])
    return report["exit"], report["modules"]


def compiled_app(make_app: AppFactory) -> Path:
    root = make_app({"agent/tools/add.py": TOOL})
    compile_to_disk(root)
    return root


def matching(modules: list[str], *packages: str) -> list[str]:
    return [m for m in modules if any(m == p or m.startswith(p + ".") for p in packages)]


def test_compile_check_loads_no_pydantic_jsonschema_compiler_or_authored_code(
    make_app: AppFactory,
) -> None:
    code, modules = loaded_modules(compiled_app(make_app), "compile", "--check")
    assert code == 0  # fresh
    assert "eve.artifacts" in modules
    assert matching(modules, "pydantic", "jsonschema", "eve.compiler", "agent") == []


def test_compile_check_of_stale_artifacts_loads_no_authored_code(make_app: AppFactory) -> None:
    root = compiled_app(make_app)
    (root / "agent/tools/add.py").write_text(TOOL + "\n# edited\n")
    code, modules = loaded_modules(root, "compile", "--check")
    assert code == 1
    assert matching(modules, "pydantic", "jsonschema", "eve.compiler", "agent") == []


def test_run_on_fresh_artifacts_loads_no_compiler_module(make_app: AppFactory) -> None:
    code, modules = loaded_modules(compiled_app(make_app), "run", "add 1 and 2")
    assert code == 0
    assert "agent.tools.add" in modules  # the turn did run the tool
    assert matching(modules, "eve.compiler") == []
    # traces not asked for (no OTEL_*): the API's no-op tracer, no SDK
    assert matching(modules, "opentelemetry.sdk", "opentelemetry.exporter") == []
    # no connections: the mcp SDK is never imported, not even to close a pool at exit
    assert matching(modules, "mcp", "mcp_types", "eve.connections.pool") == []


def test_run_on_stale_artifacts_recompiles_through_the_compiler(make_app: AppFactory) -> None:
    # The other side of the test above: the compiler is loaded exactly when it is needed.
    root = compiled_app(make_app)
    (root / "agent/instructions.md").write_text("Be brief.\n")
    code, modules = loaded_modules(root, "run", "add 1 and 2")
    assert code == 0
    assert "eve.compiler.pipeline" in modules
