"""bench/fuzz.py runs every target, reports a failure with what reproduces it, and
reproduces it from the seed and case (no timings asserted)."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "bench" / "fuzz.py"


def load():
    spec = importlib.util.spec_from_file_location("fuzz", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_every_target_runs_clean(capsys):
    fuzz = load()
    assert fuzz.main(["--inputs", "120", "--seed", "3"]) == 0
    header, *rows, footer = capsys.readouterr().out.splitlines()
    assert header.split()[:3] == ["target", "inputs", "failures"]
    assert [row.split()[0] for row in rows] == fuzz.TARGETS
    for row in rows:
        target, inputs, failures = row.split()[:3]
        assert (inputs, failures) == ("120", "0"), row
    assert footer.startswith("seed 3; peak memory")


def test_a_failure_names_target_seed_case_and_input_and_reproduces(capsys, monkeypatch):
    fuzz = load()
    seen = []

    def check(data: bytes) -> bool:
        seen.append(data)
        if len(seen) == 5:
            raise ValueError("boom")  # an untyped error out of a decoder
        return False

    codec = dataclasses.replace(fuzz._CODEC_BY_NAME["udp"], check=check)
    monkeypatch.setitem(fuzz._CODEC_BY_NAME, "udp", codec)
    assert fuzz.main(["--codec", "udp", "--inputs", "50", "--seed", "9"]) == 1
    out = capsys.readouterr().out
    assert "FAILURE udp seed=9 case=0: unexpected ValueError: boom" in out
    assert f"input {seen[4].hex()}" in out
    assert "python bench/fuzz.py --codec udp --seed 9 --case 0" in out

    # The case alone gives the same inputs, so the same failure.
    first = list(seen)
    seen.clear()
    assert fuzz.main(["--codec", "udp", "--seed", "9", "--case", "0"]) == 1
    assert seen == first


def test_a_stack_failure_lists_the_inputs_of_its_case(capsys, monkeypatch):
    fuzz = load()

    def broken(case, count, stats):
        for i in range(count):
            case.note("datagram", bytes((i,)))
            if i == 2:
                raise AssertionError("internal error in the endpoint")
            stats["inputs"] += 1

    monkeypatch.setitem(fuzz.STACKS, "coap-endpoint", broken)
    assert fuzz.main(["--codec", "coap-endpoint", "--inputs", "10", "--json"]) == 1
    err = capsys.readouterr().err
    assert "FAILURE coap-endpoint seed=0 case=0: property does not hold" in err
    assert "input datagram:00" in err and "input datagram:02" in err
