"""``python -m scoreframe`` runs the CLI."""

import sys

from scoreframe.cli import run

sys.exit(run())
