"""What the local-model tests share: the server `make test-local-model` started, the agents
they run on it, and ``eve run --json`` read back as events."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_run_cli import eve_run, eve_run_process

#: the server's OpenAI-compatible base URL (``http://127.0.0.1:PORT/v1``), when one runs
LOCAL_MODEL_URL = os.environ.get("EVE_LOCAL_MODEL_URL", "")
#: the server's --ctx-size: the window an agent declares for it
LOCAL_MODEL_CTX = int(os.environ.get("EVE_LOCAL_MODEL_CTX", "2048"))
#: the model as eve names it (llama-server answers to any name; it runs with --alias smollm2)
LOCAL_MODEL = "openai/smollm2"

needs_server = pytest.mark.skipif(
    not LOCAL_MODEL_URL,
    reason="no local model server: `make test-local-model` builds llama.cpp's server (ten minutes "
    "or more the first time), runs SmolLM2 on it and sets EVE_LOCAL_MODEL_URL",
)

#: greedy sampling with a fixed seed: a 135M model's answers vary less, though the tests
#: assert eve's behaviour, never the model's wording
STEADY = {"temperature": 0, "seed": 7}


def agent_source(*, model: str = "openai/gpt-4o", imports: str = "", **config: Any) -> str:
    """An ``agent.py`` for ``model`` (runs use ``--model openai/smollm2``, so the configured
    one is never asked) with ``define_agent`` keywords given as Python source."""
    keywords = "".join(f"    {name}={value},\n" for name, value in config.items())
    return (
        f"from eve import define_agent\n{imports}\n"
        f"default = define_agent(\n    model={model!r},\n{keywords})\n"
    )


@dataclass(frozen=True)
class LocalRun:
    """One ``eve run --json`` against the local server."""

    returncode: int
    events: list[dict[str, Any]]
    stderr: str

    def of(self, kind: str) -> list[dict[str, Any]]:
        """The ``data`` of every event of type ``kind``, in order."""
        return [e["data"] for e in self.events if e["type"] == kind]

    def one(self, kind: str) -> dict[str, Any]:
        [data] = self.of(kind)
        return data

    def failure(self) -> str:
        """What to show when an assertion about this run fails."""
        return f"exit {self.returncode}\nstderr: {self.stderr}\nevents: {self.events}"


def local_env() -> dict[str, str | None]:
    return {"OPENAI_BASE_URL": LOCAL_MODEL_URL, "OPENAI_API_KEY": None}


def run_local(root: Path, prompt: str, *args: str, process: bool = False) -> LocalRun:
    """``eve run --json --model openai/smollm2 PROMPT ARGS`` in ``root``: in this process, or
    as a process of its own where a fresh interpreter's logging is what is checked."""
    argv = (prompt, "--json", "--model", LOCAL_MODEL, *args)
    if process:
        env = {"OPENAI_BASE_URL": LOCAL_MODEL_URL}
        done = eve_run_process(root, *argv, env=env)
    else:
        done = eve_run(root, *argv, env=local_env())
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return LocalRun(done.returncode, events, done.stderr)
