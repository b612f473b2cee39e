from shared.cli import main

from . import CONNECTOR

main(CONNECTOR)
