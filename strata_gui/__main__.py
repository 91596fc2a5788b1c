"""`python -m strata_gui` behaves like the `strata` command."""

from strata_gui.cli import console_main

console_main()
