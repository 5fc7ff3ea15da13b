"""`python -m ktriage` runs the command-line interface and exits with its code (ktriage.cli.exit_codes)."""

import sys

from ktriage.cli.app import main

sys.exit(main())
