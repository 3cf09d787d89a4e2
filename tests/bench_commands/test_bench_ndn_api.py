"""`iotbench bench ndn-api`: the pairs agree, the command prints what it says (no timings asserted)."""

from __future__ import annotations

import json
import sys

import pytest

from iotbench import cli
from iotbench.bench_commands import ndn_api

S5_OPERATIONS = [
    "URI → Name",
    "name size",
    "get name component",
    "append to name",
    "create Interest",
    "get Interest name",
    "create Data (HMAC)",
    "create Data (ECDSA)",
    "verify Data (ECDSA)",
    "get Data name",
    "get Data content",
]


def test_every_s5_operation_is_a_pair_that_agrees():
    ops = ndn_api.operations()  # raises if any pair disagrees
    assert [op.name for op in ops if op.s5] == S5_OPERATIONS
    assert all(op.same(op.ours(), op.theirs()) for op in ops)


def test_measure_gives_both_rates():
    op = ndn_api.operations()[1]
    result = ndn_api.measure(op, 0.01)
    assert result.ours_per_s > 0 and result.theirs_per_s > 0
    assert result.ratio == result.ours_per_s / result.theirs_per_s


@pytest.fixture
def quick(monkeypatch):
    monkeypatch.setattr(ndn_api, "BATCH_S", 0.0005)


def test_json_lines_one_per_operation(quick, capsys):
    assert cli.main(["bench", "ndn-api", "--seconds", "0.001", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["operation"] for line in lines if line["s5"]] == S5_OPERATIONS
    for line in lines:
        assert set(line) == {
            "operation",
            "work",
            "s5",
            "iotbench_per_s",
            "python_ndn_per_s",
            "ratio",
        }
        assert line["ratio"] == pytest.approx(
            line["iotbench_per_s"] / line["python_ndn_per_s"], rel=1e-2
        )


def test_table(quick, capsys):
    assert cli.main(["bench", "ndn-api", "--seconds", "0.001"]) == 0
    out = capsys.readouterr().out
    assert "python-ndn" in out and "create Data (ECDSA)" in out and "ratio" in out


def test_missing_python_ndn_is_a_one_line_error(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ndn.encoding", None)  # import fails
    assert cli.main(["bench", "ndn-api", "--json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'iotbench[test]'" in err
    assert "Traceback" not in err
