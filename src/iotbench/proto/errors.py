"""Errors shared by every protocol codec."""


class DecodeError(ValueError):
    """Raised by a codec when bytes are not a well-formed message of its protocol.

    Every codec raises this (or a subclass) and nothing else for bad input, so a
    stack can count and drop malformed packets without crashing.
    """
