"""Argument types of the command line: numbers with their bounds, ports, each
refusing bad text with a message argparse shows as a usage error; and the
options that pick runs and change settings (--filter, --set), which several
commands take with the same meaning."""

from __future__ import annotations

import argparse


def int_at_least(low: int, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"{value} must be >= {low}")
    return value


def positive_int(text: str) -> int:
    return int_at_least(1, text)


def non_negative_int(text: str) -> int:
    return int_at_least(0, text)


def ipv6_prefix_length(text: str) -> int:
    value = non_negative_int(text)
    if value > 128:
        raise argparse.ArgumentTypeError(f"{value} is not an IPv6 prefix length (0..128)")
    return value


def add_filter_option(parser: argparse.ArgumentParser, help: str, metavar: str) -> None:
    """--filter AXIS=V (repeatable), into args.filter."""
    parser.add_argument("--filter", action="append", default=[], metavar=metavar, help=help)


def add_set_option(parser: argparse.ArgumentParser, help: str) -> None:
    """--set KEY=VALUE (repeatable), into args.overrides."""
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides", help=help
    )


def port(text: str) -> int:
    value = non_negative_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port number (0..65535)")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text} must be a finite number > 0")
    return value
