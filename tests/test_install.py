"""eve installs as a wheel, outside this repository: a new venv gets ``eve`` from the built
wheel alone, and ``eve init`` there makes an app that compiles, runs offline and passes its
eval. The venv borrows its dependencies from the test's own (a path line: no site hooks, so
the editable eve of this repo stays out), and ``pip check`` says they satisfy the wheel's
metadata; ``make test-install`` does the same with a plain install from the package index."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

from eve._version import DISTRIBUTION, __version__

REPO = Path(__file__).resolve().parents[1]


def run(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "EVE_APP_ROOT")}
    done = subprocess.run(
        [str(a) for a in args],
        check=False,
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, f"{args}: {done.stdout}\n{done.stderr}"
    return done


def build_wheel(tmp_path: Path) -> Path:
    """The wheel of a copy of the sources (setuptools writes build/ beside them)."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("eve", "agent", "examples"):
        # links kept: templates/example links to agent/ and examples/, as in the repo
        shutil.copytree(REPO / name, source / name, symlinks=True, ignore=skip)
    pip = [sys.executable, "-m", "pip"]
    run(*pip, "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", "dist", "./source",
        cwd=tmp_path)  # fmt: skip
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    return wheel


def test_the_wheel_installs_and_starts_a_new_app_outside_the_repo(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    assert wheel.name == f"{DISTRIBUTION.replace('-', '_')}-{__version__}-py3-none-any.whl"
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    site = Path(
        run(
            python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp_path
        ).stdout.strip()
    )
    (site / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    run(sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", wheel,
        cwd=tmp_path)  # fmt: skip
    run(sys.executable, "-m", "pip", "--python", python, "check", cwd=tmp_path)

    eve = env_dir / "bin" / "eve"
    home = tmp_path / "home"
    home.mkdir()
    where = run(python, "-c", "import eve; print(eve.__file__)", cwd=home).stdout
    assert where.startswith(str(site)), where  # the wheel's eve, not this repository's
    assert __version__ in run(eve, "--version", cwd=home).stdout

    run(eve, "init", "desk", cwd=home)
    app = home / "desk"
    assert "using the offline model" in run(eve, "run", "Where is A-1001?", cwd=app).stderr
    assert "1/1 case(s) passed" in run(eve, "eval", cwd=app).stderr
    run(eve, "compile", "--check", cwd=app)

    run(eve, "init", "--example", "shop", cwd=home)
    assert "artifacts are fresh" in run(eve, "compile", "--check", cwd=home / "shop").stdout
