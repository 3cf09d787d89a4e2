"""Output that is not a terminal: every digit in tables, and a closed pipe ends quietly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from iotbench import cli
from iotbench.report.tables import rich_table, summarize
from iotbench.scenarios import list_builtin, load_scenario
from iotbench.terminal import console

EXAMPLE = Path(__file__).parents[1] / "scenarios" / "example.toml"


def test_piped_table_keeps_every_digit_and_whole_headers(capsys) -> None:
    metrics = {
        f"a_rather_long_metric_name_number_{i}_s": value
        for i, value in enumerate([2.04, 0.001007, 123456.7, 0.5, 17, 3.14159])
    }
    summary = summarize([({"variant": "coap-con"}, metrics)], [{"name": "variant", "values": []}])
    console().print(rich_table(summary, title="wide", fit=console().is_terminal))
    out = capsys.readouterr().out
    # Far wider than the 80 columns rich assumes for a pipe, and nothing cut.
    assert max(len(line) for line in out.splitlines()) > 200
    for name in metrics:
        assert name in out
    for text in ("2.04", "0.001007", "123456.7", "0.5", "17", "3.142"):
        assert f" {text} " in out or out.rstrip().endswith(text), text


def test_piped_list_keeps_descriptions_whole(capsys) -> None:
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    for name in list_builtin():
        assert load_scenario(name).description in out


def _iotbench_into_closed_pipe(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run the command with stdout a pipe nobody reads any more (`| head -0`)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-m", "iotbench", *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd,
            timeout=300,
        )
    finally:
        os.close(write_end)


def test_run_json_into_a_closed_pipe_ends_quietly_and_keeps_the_store(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ("run", str(EXAMPLE), "--out", str(out), "--jobs", "1", "--json")
    done = _iotbench_into_closed_pipe(*args, cwd=tmp_path)
    assert done.returncode == cli.EXIT_BROKEN_PIPE
    assert "Traceback" not in done.stderr and "Error" not in done.stderr
    # The run that could not be printed was stored first; the campaign resumes.
    again = subprocess.run(
        [sys.executable, "-m", "iotbench", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert again.returncode == 0, again.stderr
    assert "1 already stored" in again.stderr
    assert len(again.stdout.splitlines()) == 12


def test_show_and_report_into_a_closed_pipe_end_quietly(tmp_path: Path) -> None:
    for args in (("show", str(EXAMPLE)), ("list",)):
        done = _iotbench_into_closed_pipe(*args, cwd=tmp_path)
        assert done.returncode == cli.EXIT_BROKEN_PIPE, args
        assert done.stderr == "", args
    out = tmp_path / "out"
    assert cli.main(["run", str(EXAMPLE), "--out", str(out), "--jobs", "1", "--json"]) == 0
    done = _iotbench_into_closed_pipe("report", str(out), cwd=tmp_path)
    assert done.returncode == cli.EXIT_BROKEN_PIPE
    assert "Traceback" not in done.stderr
