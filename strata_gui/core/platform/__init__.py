"""This computer's operating system, used carefully: regular files only, the SQLite database
file, engines that die with Strata, one app per user, the log file, and the warm start."""

from typing import TYPE_CHECKING

from strata_gui.core.base.lazy import lazy_exports

if TYPE_CHECKING:
    from strata_gui.core.platform.child_guard import (
        PR_SET_DEATHSIG,
        armed_by,
        guarded_launch,
        linux_preexec,
    )
    from strata_gui.core.platform.files import (
        NotRegularFileError,
        check_regular,
        is_regular,
        open_regular,
    )
    from strata_gui.core.platform.instance import (
        HAND_OVER,
        MAX_REQUEST,
        REQUEST_TIMEOUT_S,
        SHOW,
        STARTING_GRACE_S,
        ActivationServer,
        Answer,
        Claim,
        InstanceAddress,
        InstanceLock,
        ask,
        claim_or_ask,
        request,
        unanswered_text,
    )
    from strata_gui.core.platform.logging_setup import (
        LOG_FORMAT,
        MIN_SECRET_LENGTH,
        REDACTED,
        EarlyRecords,
        RedactingFormatter,
        close_logging,
        configure_logging,
        keep_early_records,
        redact,
        register_secret,
    )
    from strata_gui.core.platform.storage import (
        DatabaseDamagedError,
        DatabaseLockedError,
        is_damaged,
        is_locked,
        move_aside,
        open_database,
        storage_error,
    )
    from strata_gui.core.platform.warm import (
        KEY_VARIABLE,
        PORT_FLAG,
        RECORD_NAME,
        UNCLAIMED_S,
        VERSION,
        WarmEngine,
        WarmSlot,
        forget,
        prelaunch,
        remember,
    )

__all__ = [
    "HAND_OVER",
    "KEY_VARIABLE",
    "LOG_FORMAT",
    "MAX_REQUEST",
    "MIN_SECRET_LENGTH",
    "PORT_FLAG",
    "PR_SET_DEATHSIG",
    "RECORD_NAME",
    "REDACTED",
    "REQUEST_TIMEOUT_S",
    "SHOW",
    "STARTING_GRACE_S",
    "UNCLAIMED_S",
    "VERSION",
    "ActivationServer",
    "Answer",
    "Claim",
    "DatabaseDamagedError",
    "DatabaseLockedError",
    "EarlyRecords",
    "InstanceAddress",
    "InstanceLock",
    "NotRegularFileError",
    "RedactingFormatter",
    "WarmEngine",
    "WarmSlot",
    "armed_by",
    "ask",
    "check_regular",
    "claim_or_ask",
    "close_logging",
    "configure_logging",
    "forget",
    "guarded_launch",
    "is_damaged",
    "is_locked",
    "is_regular",
    "keep_early_records",
    "linux_preexec",
    "move_aside",
    "open_database",
    "open_regular",
    "prelaunch",
    "redact",
    "register_secret",
    "remember",
    "request",
    "storage_error",
    "unanswered_text",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "child_guard": ["PR_SET_DEATHSIG", "armed_by", "guarded_launch", "linux_preexec"],
    "files": ["NotRegularFileError", "check_regular", "is_regular", "open_regular"],
    "instance": ["HAND_OVER", "MAX_REQUEST", "REQUEST_TIMEOUT_S", "SHOW", "STARTING_GRACE_S", "ActivationServer", "Answer", "Claim", "InstanceAddress", "InstanceLock", "ask", "claim_or_ask", "request", "unanswered_text"],
    "logging_setup": ["LOG_FORMAT", "MIN_SECRET_LENGTH", "REDACTED", "EarlyRecords", "RedactingFormatter", "close_logging", "configure_logging", "keep_early_records", "redact", "register_secret"],
    "storage": ["DatabaseDamagedError", "DatabaseLockedError", "is_damaged", "is_locked", "move_aside", "open_database", "storage_error"],
    "warm": ["KEY_VARIABLE", "PORT_FLAG", "RECORD_NAME", "UNCLAIMED_S", "VERSION", "WarmEngine", "WarmSlot", "forget", "prelaunch", "remember"],
})
