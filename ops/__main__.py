"""``python -m ops``: the ``memledger`` command, for child processes of ``memledger serve``."""

from ops.cli import main

main()
