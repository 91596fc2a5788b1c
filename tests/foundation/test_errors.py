"""Expected conditions and bugs are different types (never told apart by their wording)."""

from __future__ import annotations

from strata_gui.core.base.errors import InternalError, ServerError, StrataError, describe


def test_a_bug_becomes_an_internal_error_with_its_traceback() -> None:
    try:
        {}["missing"]  # the bug under test
    except KeyError as exc:
        err = describe(exc)
    assert isinstance(err, InternalError) and isinstance(err.original, KeyError)
    assert err.message.startswith("Internal error in Strata: KeyError")
    assert err.hint and "bug" in err.hint and "report" in err.hint
    assert err.details and "Traceback" in err.details and "test_errors.py" in err.details


def test_an_expected_condition_stays_itself() -> None:
    cond = ServerError("The engine stopped.", hint="Start it again.")
    assert describe(cond) is cond
    assert not isinstance(describe(cond), InternalError)
    # Even a condition whose words look like a bug report is not one.
    looks_like_a_bug = StrataError("Unexpected error: the server said no")
    assert not isinstance(describe(looks_like_a_bug), InternalError)
