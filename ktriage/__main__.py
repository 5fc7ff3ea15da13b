"""`python -m ktriage` runs the command-line interface."""

from ktriage.cli.app import main

main()
