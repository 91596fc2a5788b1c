"""Qt-free core of Strata: every service the GUI and the CLI share.

Nothing under this package may import Qt (enforced by an import-linter contract).
"""
