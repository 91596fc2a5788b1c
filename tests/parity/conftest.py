"""The parity suite reuses the model browser's loopback hub repos."""

from tests.models.conftest import hub_repos  # noqa: F401  (fixture)
