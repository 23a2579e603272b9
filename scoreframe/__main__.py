"""``python -m scoreframe`` runs the CLI."""

import sys

from scoreframe.cli import main

sys.exit(main())
