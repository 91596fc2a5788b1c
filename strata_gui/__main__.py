"""`python -m strata_gui` behaves like the `strata` command."""

import sys

from strata_gui.cli import main

sys.exit(main())
