"""Errors shared by every protocol stack: what a peer's bad bytes raise, and what a
stack does with an exception of its own."""

from __future__ import annotations

import logging

_log = logging.getLogger("iotbench.proto")


class DecodeError(ValueError):
    """Raised by a codec when bytes are not a well-formed message of its protocol.

    Every codec raises this (or a subclass) and nothing else for bad input, so a
    stack can count and drop malformed packets without crashing.
    """


def own_error(strict: bool, exc: Exception, where: str) -> None:
    """Called by a stack's guard with an exception of the stack's own: not a peer's
    malformed bytes (those are DecodeErrors, counted and dropped) but a bug in our
    code, which the guard has counted (`internal_errors`).

    A strict stack, as every simulation builds them, raises it again, so the run
    fails with its traceback instead of passing as a counter in a plausible result.
    A lenient one, as the servers on real sockets are built, logs the traceback and
    carries on, so that one peer's trouble does not take the server down for all.
    """
    if strict:
        raise exc
    _log.error("%s: internal error", where, exc_info=exc)
