//! The Python component runner: worker protocol, process lifecycle, timeouts and skip reasons.
