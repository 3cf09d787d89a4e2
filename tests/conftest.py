"""Shared test helpers.

`require_peer` is the one place that decides what happens when an interop
peer (an executable we did not write: tshark, coap-client, mosquitto ...) is
missing, and `require_module` when a Python peer's module is (aiocoap.oscore,
which needs aiocoap's oscore extra): the test is skipped, unless
IOTBENCH_REQUIRE_PEERS=1 is set (as in CI), in which case it fails, so a
missing peer is never a silent pass.
"""

from __future__ import annotations

import importlib
import os
import shutil
from collections.abc import Callable
from types import ModuleType
from typing import NoReturn

import pytest
from hypothesis import HealthCheck, settings

REQUIRE_PEERS_ENV = "IOTBENCH_REQUIRE_PEERS"

# Property tests are derandomized: the same examples on every run and machine, so
# the suite never fails for one user and passes for the next. Open-ended random
# exploration is `python bench/fuzz.py` (and HYPOTHESIS_PROFILE=explore here).
# A test's own @settings(max_examples=...) keeps its count in both profiles.
settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("explore", max_examples=2000, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def peers_required() -> bool:
    """True when missing interop peers must fail tests instead of skipping them."""
    return os.environ.get(REQUIRE_PEERS_ENV, "").strip().lower() in {"1", "true", "yes"}


def _missing(message: str) -> NoReturn:
    """Skip the test for a missing peer, or fail it under IOTBENCH_REQUIRE_PEERS=1."""
    if peers_required():
        pytest.fail(f"{message}, and {REQUIRE_PEERS_ENV}=1 requires it")
    pytest.skip(message)


def find_peer(name: str) -> str:
    """Path of executable `name`; skip the test, or fail it under IOTBENCH_REQUIRE_PEERS=1."""
    path = shutil.which(name)
    if path is not None:
        return path
    _missing(f"interop peer {name!r} is not installed (not found on PATH)")


def import_peer(module: str) -> ModuleType:
    """Python module `module` of an interop peer (e.g. aiocoap.oscore, which needs
    aiocoap's oscore extra); skip the test, or fail it under IOTBENCH_REQUIRE_PEERS=1."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        _missing(f"interop peer module {module!r} cannot be imported ({exc})")


@pytest.fixture
def require_peer() -> Callable[[str], str]:
    """`require_peer("tshark")` -> the executable's path (skip or fail when missing).

    Usage::

        @pytest.mark.interop
        def test_something(require_peer):
            tshark = require_peer("tshark")
            subprocess.run([tshark, ...])
    """
    return find_peer


@pytest.fixture
def require_root() -> None:
    """Network namespaces and TUN devices (`iotbench emulate`): root, or skip
    (fail under IOTBENCH_REQUIRE_PEERS=1, as CI runs them)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or not os.path.exists("/dev/net/tun"):
        _missing("network namespaces and TUN devices need root and /dev/net/tun")


@pytest.fixture
def require_module() -> Callable[[str], ModuleType]:
    """`require_module("aiocoap.oscore")` -> the module (skip or fail when missing)."""
    return import_peer
