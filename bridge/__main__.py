"""``python -m bridge``: see :mod:`bridge.cli`."""

from bridge.cli import main

main()
