"""How authored code is imported: the agent directory is the package ``agent`` at the app root.

Shared by the compiler (which imports authored modules to read them) and the runtime (which
imports them to run them); neither owns the other, so this small piece lives beside both.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
from pathlib import Path

AUTHORED_PACKAGE = "agent"


def prepare_authored_imports(app_root: Path) -> None:
    """Make ``import agent…`` mean this app's ``agent/`` and forget any other app's modules.

    Tests and ``eve dev`` load several apps (or several versions of one) in one process, so a
    cached ``agent.tools.x`` from before would otherwise shadow the file on disk now.
    """
    root = str(app_root.resolve())
    if sys.path[:1] != [root]:
        while root in sys.path:
            sys.path.remove(root)
        sys.path.insert(0, root)
    for name in [n for n in sys.modules if n == AUTHORED_PACKAGE or n.startswith("agent.")]:
        del sys.modules[name]
    importlib.invalidate_caches()
    _install_package(app_root.resolve() / AUTHORED_PACKAGE)


def _install_package(agent_dir: Path) -> None:
    # Without an agent/__init__.py, `agent` would be a namespace package that merges every
    # `agent/` directory on sys.path (another app's, the current directory's), and a regular
    # package elsewhere would win over this app's plain directories. Pin it to this one.
    init = agent_dir / "__init__.py"
    if init.is_file():
        spec = importlib.util.spec_from_file_location(
            AUTHORED_PACKAGE, init, submodule_search_locations=[str(agent_dir)]
        )
    else:
        spec = importlib.machinery.ModuleSpec(AUTHORED_PACKAGE, None, is_package=True)
        spec.submodule_search_locations = [str(agent_dir)]
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[AUTHORED_PACKAGE] = module
    if spec.loader is not None:
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[AUTHORED_PACKAGE]
            raise


def module_id_for(logical_path: str) -> str:
    """``agent/tools/get_weather.py`` → ``agent.tools.get_weather``."""
    parts = logical_path.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)
