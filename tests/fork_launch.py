"""``python -S tests/fork_launch.py MODULE ARG…``: ``python -m MODULE ARG…`` as a child of
the test's fork server, for a process that a program other than the test starts
(``--script SOCKET SCRIPT ARG…``: ``python SCRIPT ARG…``).

The MCP conformance suite starts its client (``python -m tests.connections.conformance_client``)
once per scenario: 1.3 s of CPU a start, nearly all of it importing eve and the MCP SDK,
which the fork server has already imported. ``forked.module_command`` gives the command line
and names the fork server's socket in ``EVE_TEST_FORK_SOCKET``; this program passes on its
directory, environment, arguments and standard streams, forwards SIGTERM and SIGINT to the
child, and exits with the child's status (``128 + n`` for a signal ``n``, as a shell reports it).
"""

from __future__ import annotations

import os
import signal
import sys

# run as a script: its directory, tests/, is sys.path[0] (the fork server's module needs
# only the standard library, so -S leaves out site's start)
from forkserver import SOCKET_ENV, request_fork, returncode

#: ``--script SOCKET SCRIPT ARG…``: ``python SCRIPT ARG…``, the fork server's socket named on
#: the command line, for a program that starts its command with an environment of its own
#: (the MCP SDK gives a stdio server only the basics: ``forked.script_command``)
SCRIPT = "--script"


def main(argv: list[str]) -> int:
    env = dict(os.environ)
    target: dict[str, str]
    if argv[0] == SCRIPT:
        _, server, script, *args = argv
        target = {"script": script}
    else:
        module, *args = argv
        server = env.pop(SOCKET_ENV)
        target = {"module": module}
    path = [entry for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry]
    request = {**target, "args": args, "cwd": os.getcwd(), "env": env, "path": path}
    # held until the child's pid is known and the handlers forward to it: the child may
    # run (and its starter signal this program) before ``request_fork`` returns, and a
    # signal then would end this program by its default action, the child left running
    forwarded = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, forwarded)
    pid, status = request_fork(server, request, (0, 1, 2))
    for number in forwarded:
        signal.signal(number, lambda sent, _: os.kill(pid, sent))
    signal.pthread_sigmask(signal.SIG_UNBLOCK, forwarded)
    code = returncode(status)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
