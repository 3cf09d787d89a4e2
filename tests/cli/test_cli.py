"""The `iotbench` command line: list, show, run (--json), user errors, serve/client."""

from __future__ import annotations

import json
import socket
import sys
import types
from pathlib import Path

import pytest

from iotbench import cli
from iotbench.runner import execute
from iotbench.scenarios import expand, load_scenario

EXAMPLE = Path(__file__).parents[1] / "scenarios" / "example.toml"


def fake_run(config: dict, seed: int, pcap_path: str | None = None) -> dict[str, float | int]:
    size = config["workload"]["object_size_bytes"]
    con = config["protocol"]["coap"]["type"] == "con"
    return {
        "time_s": size / 1000 + (seed % 1000) / 1e6 + (0.5 if con else 0.0),
        "bytes": size + (80 if con else 40),
        "unmeasured": float("nan"),
    }


def failing_run(config: dict, seed: int, pcap_path: str | None = None) -> dict:
    if config["workload"]["object_size_bytes"] == 1000:
        raise RuntimeError("too big")
    return fake_run(config, seed, pcap_path)


@pytest.fixture
def fake_sim(monkeypatch):
    """Make the runner's default run function the fake one."""
    monkeypatch.setattr(execute, "load_default_run_fn", lambda: fake_run)


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_list(capsys) -> None:
    code, out, _ = run_cli(capsys, "list")
    assert code == 0
    assert "s1-object-download" in out and "s3-robustness" in out


def test_show_prints_toml_and_runs(capsys) -> None:
    code, out, _ = run_cli(capsys, "show", str(EXAMPLE), "--filter", "size=10", "--reps", "1")
    assert code == 0
    assert out.startswith(EXAMPLE.read_text())
    assert "example: 2 runs" in out


def test_run_json_lines(fake_sim, capsys, tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    code, out, err = run_cli(
        capsys, "run", str(EXAMPLE), "--out", str(out_dir), "--jobs", "1", "--json"
    )
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 12
    records = [json.loads(line) for line in lines]  # strict JSON: no NaN tokens
    first = records[0]
    assert set(first) == {"scenario", "params", "repetition", "seed", "metrics"}
    assert first["scenario"] == "example"
    assert first["params"] == {"variant": "con", "size": 10}
    assert first["metrics"]["bytes"] == 90 and first["metrics"]["unmeasured"] is None
    assert isinstance(first["seed"], int)
    # The table and the status line went to stderr.
    assert "12 runs: 12 executed, 0 already stored, 0 failed" in err
    assert (out_dir / "results.duckdb").is_file()

    # Re-running prints the stored runs again and executes nothing.
    code, out, err = run_cli(capsys, "run", str(EXAMPLE), "--out", str(out_dir), "--json")
    assert code == 0
    assert [json.loads(line) for line in out.splitlines()] == records
    assert "0 executed, 12 already stored" in err


def test_run_with_pool_filter_and_set(fake_sim, capsys, tmp_path: Path) -> None:
    code, out, _ = run_cli(
        capsys,
        "run",
        str(EXAMPLE),
        "--out",
        str(tmp_path),
        "--jobs",
        "2",
        "--json",
        "--filter",
        "variant=non",
        "--set",
        "workload.items=3",
        "--reps",
        "1",
    )
    assert code == 0
    records = [json.loads(line) for line in out.splitlines()]
    assert sorted(r["params"]["size"] for r in records) == [10, 100, 1000]
    assert {r["params"]["variant"] for r in records} == {"non"}


def test_run_prints_summary_table(fake_sim, capsys, tmp_path: Path) -> None:
    code, out, _ = run_cli(capsys, "run", str(EXAMPLE), "--out", str(tmp_path), "--jobs", "1")
    assert code == 0
    assert "variant" in out and "time_s" in out and "bytes" in out
    assert "90" in out  # mean bytes of con at size 10


def test_run_default_out_dir(fake_sim, capsys, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, _ = run_cli(capsys, "run", str(EXAMPLE), "--reps", "1", "--jobs", "1")
    assert code == 0
    assert (tmp_path / "results" / "example" / "results.duckdb").is_file()


def test_failed_runs_exit_1(monkeypatch, capsys, tmp_path: Path) -> None:
    monkeypatch.setattr(execute, "load_default_run_fn", lambda: failing_run)
    code, out, err = run_cli(
        capsys, "run", str(EXAMPLE), "--out", str(tmp_path), "--jobs", "1", "--json"
    )
    assert code == 1
    assert len(out.splitlines()) == 8
    assert "4 runs failed" in err
    assert "run failed variant=con size=1000 rep=0: RuntimeError: too big" in err
    # The summary names each failed run with the command that runs it alone again.
    command = (
        f"iotbench run {EXAMPLE} --filter variant=con --filter size=1000 --rep 0 --jobs 1 "
        f"--out {tmp_path}"
    )
    assert f"variant=con size=1000 rep=0: RuntimeError: too big\n    run it again: {command}" in (
        " ".join(err.split(" "))
    )
    monkeypatch.setattr(execute, "load_default_run_fn", lambda: fake_run)
    code, _, err = run_cli(capsys, *command.split()[1:])
    assert code == 0 and "1 runs: 1 executed" in err  # that run alone


def cut_short_run(config: dict, seed: int, pcap_path: str | None = None) -> dict:
    return {
        **fake_run(config, seed),
        "hit_time_limit": int(config["protocol"]["coap"]["type"] == "con"),
    }


def test_runs_the_time_limit_cut_short_are_named(monkeypatch, capsys, tmp_path: Path) -> None:
    """A run that max_sim_time_s ended before its workload was done has metrics of
    only what it did: the summary says which, and how to let them finish."""
    monkeypatch.setattr(execute, "load_default_run_fn", lambda: cut_short_run)
    code, _, err = run_cli(capsys, "run", str(EXAMPLE), "--out", str(tmp_path), "--jobs", "1")
    assert code == 0
    text = " ".join(err.split())
    assert "6 runs hit max_sim_time_s before their workload was done" in text
    assert "example variant=con size=10 rep=0" in text and "variant=non" not in text
    assert "--set max_sim_time_s=" in text


def test_rep_selects_one_repetition_with_its_seed() -> None:
    """`--rep K` runs repetition K alone, as `--reps K+1` would have run it."""
    args = cli.build_parser().parse_args(["run", str(EXAMPLE), "--filter", "size=10", "--rep", "2"])
    _, runs = cli._select(args)
    every = expand(load_scenario(str(EXAMPLE)), {"size": ["10"]}, reps=3)
    assert runs == [run for run in every if run.repetition == 2] and len(runs) == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "no-such-scenario"], "unknown scenario 'no-such-scenario'; built-in scenarios: "),
        (["show", str(EXAMPLE), "--filter", "sise=10"], "--filter sise: no such axis"),
        (["show", str(EXAMPLE), "--filter", "size=11"], "--filter size=11: no such value"),
        (
            ["run", str(EXAMPLE), "--set", "workload.itemz=3"],
            "--set workload.itemz: not a scenario key",
        ),
        (["report", "no-such-dir"], "no-such-dir: no results here"),
    ],
)
def test_user_errors_exit_2_without_traceback(capsys, argv, message) -> None:
    code, out, err = run_cli(capsys, *argv)
    assert code == 2
    assert message in err
    assert err.startswith("iotbench: error: ")
    assert "Traceback" not in err and out == ""


def test_bad_scenario_file_message(capsys, tmp_path: Path) -> None:
    bad = tmp_path / "s3.toml"
    bad.write_text(EXAMPLE.read_text().replace('type = "non"', 'type = "cn"'))
    code, _, err = run_cli(capsys, "run", str(bad), "--out", str(tmp_path / "out"))
    assert code == 2
    assert f"{bad}: axes.variant.non.protocol.coap.type: 'cn' is not one of con, non" in err
    assert not (tmp_path / "out").exists()  # nothing ran, nothing written


def test_bad_option_values_exit_2(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(["run", str(EXAMPLE), "--jobs", "0"])
    assert info.value.code == 2


def test_help_has_examples(capsys) -> None:
    with pytest.raises(SystemExit):
        cli.main(["run", "--help"])
    out = capsys.readouterr().out
    assert "--filter" in out and "examples:" in out and "iotbench run s1-object-download" in out


def test_serve_on_a_port_in_use_is_a_clear_error(capsys) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        code, _, err = run_cli(capsys, "serve", "coap", "--port", str(port))
    assert code == 2
    assert f"iotbench: error: cannot serve CoAP on 127.0.0.1 port {port}:" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["GET", "ftp://127.0.0.1/x"], "scheme 'ftp' is not a CoAP scheme"),
        (["BREW", "coap://127.0.0.1/x"], "method 'BREW' is not one of GET, POST, PUT, DELETE"),
    ],
)
def test_client_bad_request_is_a_clear_error(capsys, args, message) -> None:
    code, _, err = run_cli(capsys, "client", "coap", *args, "--timeout", "1")
    assert code == 2 and f"iotbench: error: {message}" in err


@pytest.mark.parametrize(
    "args",
    [
        ["serve", "coap", "--port", "70000"],
        ["client", "coap", "GET", "coap://h/x", "--timeout", "0"],
    ],
)
def test_serve_and_client_reject_bad_numbers(capsys, args) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(args)
    assert info.value.code == 2
    assert "error: argument" in capsys.readouterr().err


def test_serve_and_client_call_real_mode(capsys, monkeypatch) -> None:
    calls = []
    fake = types.ModuleType("iotbench.real.cli")
    fake.serve = lambda args: calls.append(("serve", args.protocol, args.host, args.port))
    fake.client = lambda args: (
        calls.append(("client", args.method, args.uri, args.payload, args.timeout)) or 3
    )
    monkeypatch.setitem(sys.modules, "iotbench.real.cli", fake)
    assert cli.main(["serve", "coap", "--port", "5700"]) == 0
    assert cli.main(["client", "coap", "GET", "coap://127.0.0.1/o", "--timeout", "2"]) == 3
    assert calls == [
        ("serve", "coap", "127.0.0.1", 5700),
        ("client", "GET", "coap://127.0.0.1/o", None, 2.0),
    ]


def test_run_does_not_import_the_plotting_libraries(tmp_path: Path) -> None:
    """`iotbench run` prints a table at its end and never draws: matplotlib (about a
    second to import) stays out of its process; `report` and `topology` load it."""
    import subprocess

    probe = (
        "import sys\n"
        "from iotbench.cli import main\n"
        "code = main(sys.argv[1:])\n"
        "print('matplotlib' in sys.modules, code)\n"
    )
    argv = ["s1-object-download", "--filter", "variant=coap", "--filter", "object_size_bytes=10"]
    argv += ["--reps", "1", "--jobs", "1", "--out", str(tmp_path / "out")]
    done = subprocess.run(
        [sys.executable, "-c", probe, "run", *argv], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip().splitlines()[-1] == "False 0", done.stdout + done.stderr


RADIO_EXAMPLE = Path(__file__).parents[2] / "docs" / "examples" / "multihop-coap.toml"


def test_run_check_books_stores_runs_whose_books_balance(capsys, tmp_path: Path) -> None:
    out = tmp_path / "out"
    argv = ["run", str(RADIO_EXAMPLE), "--check-books", "--jobs", "1", "--out", str(out)]
    code, _, err = run_cli(capsys, *argv, "--set", "workload.items=3")
    assert code == 0, err
    assert "2 runs: 2 executed, 0 already stored, 0 failed" in err


def test_run_check_books_fails_a_run_whose_books_do_not_balance(
    capsys, tmp_path: Path, monkeypatch
) -> None:
    from iotbench.world import books

    monkeypatch.setattr(books.Books, "check", lambda self, world: ["n3: an invented difference"])
    out = tmp_path / "out"
    argv = ["run", str(RADIO_EXAMPLE), "--check-books", "--jobs", "1", "--out", str(out)]
    code, _, err = run_cli(capsys, *argv, "--set", "workload.items=3", "--filter", "coap_type=con")
    assert code == cli.EXIT_RUN_FAILED
    assert "UnbalancedBooks" in err and "n3: an invented difference" in err
    assert "1 runs: 0 executed, 0 already stored, 1 failed" in err
    assert "--rep 0 --check-books --jobs 1" in err  # the command that runs it again
