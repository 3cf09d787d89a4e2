"""Fuzz every codec and every sans-I/O stack with random and mutated inputs.

    python bench/fuzz.py [--minutes N | --inputs N] [--codec NAME ...] [--seed S] [--json]
                         [--case K] [--keep-going] [--list]

Targets (`--list` prints them): one per codec (CoAP, OSCORE option values, DTLS records and
handshake messages, MQTT, MQTT-SN, the NDN TLV primitives, names and their
URIs, Interest, Data, LpPacket and S5 fragment headers, 802.15.4 frames,
6LoWPAN IPHC and fragment headers, RPL, ICMPv6, IPv4, IPv6, UDP, TCP segments)
and one per stack (CoAP endpoints, OSCORE and DTLS client and server layers,
MQTT broker (half of its cases with a password table and an ACL) and client,
MQTT-SN gateway and client, NDN forwarder, 6LoWPAN reassembler, a TCP client
and server connection, the simulator's HTTP/1.1 and HTTP/2 servers and
clients, the real-socket HTTP/1.1 server, a QUIC server, the Entity Manager's profile
parser and the manager, an RPL node, NDN's stream framing, and the real-socket
datagram and stream drivers over fake transports and a fake event loop). The
targets live in bench/fuzz_targets/ (codecs.py, stacks.py, and a module per
protocol for the later ones); this file runs them.

Inputs come from a seeded `random.Random`: random bytes, valid encodings
(from random messages) and valid encodings mutated 1-4 times (bits flipped,
bytes set, inserted, deleted, duplicated, the end cut off). Where a format
carries a checksum (802.15.4 FCS, ICMPv6, IPv4, UDP, TCP), most mutated inputs
get it recomputed, so that the parser behind the check is reached.

What is checked, for every input:

- a codec's decoder either returns a value or raises its typed decode error
  (a `DecodeError` subclass), nothing else;
- what it returns re-encodes without an error, and decoding the re-encoded
  bytes gives an equal value (for the canonical formats, CoAP, NDN TLV and
  names, S5 and 6LoWPAN fragment headers, the very same bytes; for MQTT and
  802.15.4 the same bytes but for what the decoder may ignore); the
  `check_*` functions in iotbench.codec_agreement, which the property tests
  use too, state the exact property of each codec;
- a stack never raises out of its receive call, never counts an internal
  error, stays within its limits, and only ever emits bytes its own codec
  decodes (the NDN forwarder decodes lazily and passes on what it does not
  read: for it, the packet structure, the name and a Data's SignatureInfo);
  each stack target's docstring says what else it checks (a legal state,
  bounded buffers, no timer due forever, what a clean exchange delivers);
- no case runs longer than CASE_SECONDS (60 s): one that does is reported
  as failing (CaseTimeout), with its inputs, as a loop that does not end.

Inputs are generated in cases: case K of target T uses its own generator,
`random.Random(f"{seed}:{T}:{K}")`, so a failure is reproduced by running that
case alone: the failure report prints the target, the seed, the case and the
hex input(s), and the command `python bench/fuzz.py --codec T --seed S --case K`.
A codec case is 1,000 inputs; a stack case is one fresh stack fed 32 inputs.
Nothing is kept between cases, so memory stays flat however long it runs.

Output: one line per target (inputs, failures, inputs per wall second, wall
seconds, and the share of inputs the decoder accepted), then the process's
peak memory. Exit status 1 when any input failed; the run stops at the first
failure unless --keep-going. --minutes N shares N minutes among the selected
targets instead of a fixed count of inputs (default --inputs 1000000 per
target). Results are in docs/performance.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import signal
import sys
import time
import traceback
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/, for fuzz_targets

from fuzz_targets import CODECS, STACKS  # noqa: E402
from fuzz_targets.common import Codec, StackCase, mutate, randbytes  # noqa: E402

from iotbench.proto.errors import DecodeError  # noqa: E402

CODEC_CASE = 1000  # inputs per codec case
STACK_CASE = 32  # inputs per stack case (one fresh stack)
CASE_SECONDS = 60.0  # a case running longer fails (CaseTimeout)


class Failure(Exception):
    """A property did not hold; `inputs` are the hex inputs that show it."""

    def __init__(self, message: str, inputs: list[str]) -> None:
        super().__init__(message)
        self.inputs = inputs


def codec_input(codec: Codec, rng: random.Random) -> bytes:
    r = rng.random()
    if r < 0.2:
        return randbytes(rng, rng.randrange(codec.random_max + 1))
    data = codec.valid(rng)
    if r < 0.3:
        return data
    data = mutate(data, rng)
    if codec.fixup is not None and rng.random() < 0.8:
        data = codec.fixup(data)
    return data


def run_codec_case(codec: Codec, rng: random.Random, count: int, stats: dict) -> None:
    check = codec.check
    for _ in range(count):
        data = codec_input(codec, rng)
        try:
            accepted = check(data)
        except Exception as exc:
            raise Failure(_describe(exc), [data.hex()]) from exc
        stats["inputs"] += 1
        stats["accepted"] += accepted


def _describe(exc: BaseException) -> str:
    if isinstance(exc, AssertionError):
        return f"property does not hold: {exc}" if str(exc) else "property does not hold"
    if isinstance(exc, DecodeError):
        return f"{type(exc).__name__} raised outside decoding: {exc}"
    return f"unexpected {type(exc).__name__}: {exc}"


TARGETS = [c.name for c in CODECS] + list(STACKS)
_CODEC_BY_NAME = {c.name: c for c in CODECS}


# =====================================================================
# driver
# =====================================================================


def case_rng(seed: int, target: str, case: int) -> random.Random:
    return random.Random(f"{seed}:{target}:{case}")


class CaseTimeout(Exception):
    """A case ran longer than CASE_SECONDS: most likely a loop that does not end."""


@contextlib.contextmanager
def _watchdog(seconds: float):
    """Raise CaseTimeout in the running code after `seconds` (where there is SIGALRM)."""
    if not hasattr(signal, "setitimer"):
        yield
        return

    def expired(signum, frame):
        raise CaseTimeout(f"the case ran longer than {seconds:g} s: a loop that does not end?")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_case(target: str, seed: int, case: int, count: int, stats: dict) -> None:
    rng = case_rng(seed, target, case)
    codec = _CODEC_BY_NAME.get(target)
    with _watchdog(CASE_SECONDS):
        if codec is not None:
            run_codec_case(codec, rng, count, stats)
            return
        record = StackCase(rng)
        try:
            STACKS[target](record, count, stats)
        except Failure:
            raise
        except Exception as exc:
            raise Failure(_describe(exc), record.inputs) from exc


def fuzz_target(
    target: str,
    seed: int,
    *,
    inputs: int | None,
    seconds: float | None,
    only_case: int | None,
    keep_going: bool,
    out=sys.stdout,
) -> dict:
    per_case = CODEC_CASE if target in _CODEC_BY_NAME else STACK_CASE
    stats = {"target": target, "inputs": 0, "accepted": 0, "failures": 0}
    start = time.perf_counter()
    cases = [only_case] if only_case is not None else None
    case = 0
    while True:
        if cases is not None:
            if not cases:
                break
            case = cases.pop()
            count = per_case
        else:
            if inputs is not None and stats["inputs"] >= inputs:
                break
            if seconds is not None and time.perf_counter() - start >= seconds:
                break
            count = per_case if inputs is None else min(per_case, inputs - stats["inputs"])
        try:
            run_case(target, seed, case, count, stats)
        except Failure as failure:
            stats["failures"] += 1
            stats["inputs"] += 1  # the failing input
            report_failure(target, seed, case, failure, out)
            if not keep_going:
                break
        case += 1
    wall = time.perf_counter() - start
    stats["wall_s"] = round(wall, 3)
    stats["inputs_per_s"] = round(stats["inputs"] / wall) if wall > 0 else 0
    return stats


def report_failure(target: str, seed: int, case: int, failure: Failure, out) -> None:
    cause = failure.__cause__
    print(f"FAILURE {target} seed={seed} case={case}: {failure}", file=out)
    for item in failure.inputs:
        print(f"  input {item}", file=out)
    if cause is not None:
        print("".join(traceback.format_exception(cause)).rstrip(), file=out)
    print(
        f"  reproduce: python bench/fuzz.py --codec {target} --seed {seed} --case {case}", file=out
    )
    out.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Fuzz every codec and sans-I/O stack (see the module docstring)."
    )
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--inputs", type=int, help="inputs per target (default 1000000)")
    budget.add_argument(
        "--minutes", type=float, help="total wall minutes, shared equally among the targets"
    )
    parser.add_argument(
        "--codec",
        "--target",
        dest="targets",
        nargs="+",
        metavar="NAME",
        choices=TARGETS,
        help="targets to run (default: every codec and stack; --list shows them)",
    )
    parser.add_argument("--seed", type=int, default=0, help="run seed (default 0)")
    parser.add_argument("--case", type=int, help="run only this case of each target (reproduce)")
    parser.add_argument("--keep-going", action="store_true", help="count failures, do not stop")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--list", action="store_true", help="list the targets and exit")
    args = parser.parse_args(argv)
    if args.list:
        for name in TARGETS:
            print(name, "(codec)" if name in _CODEC_BY_NAME else "(stack)")
        return 0
    targets = args.targets or TARGETS
    inputs = args.inputs
    seconds = None
    if args.minutes is not None:
        seconds = args.minutes * 60 / len(targets)
    elif inputs is None:
        inputs = 1_000_000
    results = []
    if not args.json:
        print(
            f"{'target':<20} {'inputs':>10} {'failures':>8} {'inputs/s':>9} {'wall s':>8} {'accepted':>8}"
        )
    for target in targets:
        stats = fuzz_target(
            target,
            args.seed,
            inputs=inputs,
            seconds=seconds,
            only_case=args.case,
            keep_going=args.keep_going,
            out=sys.stderr if args.json else sys.stdout,
        )
        results.append(stats)
        if not args.json:
            accepted = stats["accepted"] / stats["inputs"] if stats["inputs"] else 0.0
            print(
                f"{target:<20} {stats['inputs']:>10} {stats['failures']:>8} "
                f"{stats['inputs_per_s']:>9} {stats['wall_s']:>8.1f} "
                f"{accepted:>8.1%}"
                if target in _CODEC_BY_NAME
                else f"{target:<20} {stats['inputs']:>10} {stats['failures']:>8} "
                f"{stats['inputs_per_s']:>9} {stats['wall_s']:>8.1f} {'-':>8}",
                flush=True,
            )
        if stats["failures"] and not args.keep_going:
            break
    peak_mb = round(peak_rss_bytes() / 2**20, 1)
    if args.json:
        print(json.dumps({"seed": args.seed, "peak_rss_mb": peak_mb, "results": results}, indent=2))
    else:
        print(f"seed {args.seed}; peak memory of the process {peak_mb} MB")
    return 1 if any(s["failures"] for s in results) else 0


def peak_rss_bytes() -> int:
    """Peak resident memory of this process (0 where the platform does not say)."""
    try:
        import resource
    except ImportError:  # not on Windows
        return 0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # macOS bytes, Linux KiB


if __name__ == "__main__":
    sys.exit(main())
