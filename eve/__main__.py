"""``python -m eve`` is the ``eve`` command."""

from eve.cli import main

main()
