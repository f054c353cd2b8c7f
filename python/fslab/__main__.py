"""``python -m fslab``: the same command as ``fslab``."""

from .cli import main

main()
