"""The `iotbench` command: list, show, run and report scenarios; serve/client for real mode.

User errors (a bad scenario, option or results directory) print one line on
stderr and exit with code 2, without a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import select
import sys
import webbrowser
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table

from iotbench import __version__
from iotbench.argtypes import (
    add_filter_option,
    add_set_option,
    non_negative_int,
    positive_float,
    positive_int,
)
from iotbench.emulate.cli import add_emulate_command
from iotbench.real.arguments import add_real_commands
from iotbench.scenarios import (
    Run,
    Scenario,
    UserError,
    expand,
    list_builtin,
    load_scenario,
    parse_filter,
    parse_override,
)
from iotbench.scenarios.radio_schema import is_radio
from iotbench.scenarios.sweep import one_network
from iotbench.terminal import console, print_table

if TYPE_CHECKING:
    from rich.console import Console

    from iotbench.runner import RunFailure, RunFn, RunResult

EXIT_OK, EXIT_RUN_FAILED, EXIT_USER_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130
# What a shell reports for a Unix tool that SIGPIPE ended (128 + 13).
EXIT_BROKEN_PIPE = 141
# servers `serve` runs on real sockets
BENCHMARKS = {  # `bench NAME` -> its module
    "ndn-api": "iotbench.bench_commands.ndn_api",
    "security": "iotbench.bench_commands.security",
}  # `bench NAME` -> its module

MAIN_EPILOG = """\
examples:
  iotbench list                                   built-in scenarios
  iotbench show s3-robustness                     the file and the runs it expands to
  iotbench run s1-object-download                 run it; results in results/s1-object-download
  iotbench run s3-robustness --filter variant=coap-con --set workload.items=50 --jobs 4
  iotbench report results/s1-object-download      tables, PNG plots, report/index.html
  iotbench reproduce --quick                      every study, reduced, and one report
  iotbench serve coap --port 5683                 a CoAP server on a real socket
  iotbench serve mqtt                             an MQTT broker on 127.0.0.1:1883
  iotbench serve mqttsn-gateway --port 1884       an MQTT-SN gateway for the broker on 1883
  iotbench serve ndn                              an NDN forwarder and producer, port 6363
  iotbench shim --listen 127.0.0.1:5684 --to 127.0.0.1:5683 --scenario s3-robustness \\
      --filter condition=loss-10                  real UDP through a simulated lossy link
  iotbench emulate s4-multi-hop --filter variant=coap-get-con --attach n3 \\
      --duration 60                               real programs in S4's building, in real time
  iotbench bench ndn-api                          NDN API speed against python-ndn (S5)
  iotbench bench security                         DTLS on CoAP against NDN HMAC signatures (S4)

Scenario file format: docs/scenarios.md.
"""

SELECT_EPILOG = """\
--filter keeps some values of a sweep axis (repeat it for several axes):
  --filter variant=coap-con,coap-non --filter object_size_bytes=10
--set changes a base config key; the value is read as TOML (a bare word is a string):
  --set workload.items=50 --set protocol.coap.type=non --set network.link.delay_s=0.1
"""

RUN_EPILOG = (
    SELECT_EPILOG
    + """
Re-running the same command skips the runs already stored in OUT/results.duckdb, so
after Ctrl-C or a crash it carries on where it stopped.

examples:
  iotbench run s1-object-download
  iotbench run my-scenario.toml --reps 5 --jobs 8 --out results/try1
  iotbench run s3-robustness --filter condition=base,loss-5 --pcap
  iotbench run s2-coap-vs-http --json | jq .metrics.delivery_ratio

Output: OUT/results.duckdb, OUT/pcap/ (with --pcap), OUT/series/ (with --series),
OUT/errors.log (tracebacks of the runs that failed in the last invocation).

A run fails when the simulator raises, and a protocol stack's own exception is one
(never a counter in a plausible result). Each failed run is named at the end with
the command that runs it alone again (--rep K), and the results store keeps it with
its traceback (its `failures` table) until it runs to the end.

exit status: 0 all runs stored, 1 some runs failed (see OUT/errors.log),
2 usage or scenario error, 130 interrupted.
"""
)


def _add_execution(p: argparse.ArgumentParser) -> None:
    """--jobs, --executor, --address: where and how many runs execute."""
    p.add_argument(
        "--jobs",
        type=positive_int,
        metavar="N",
        help="worker processes (default: the number of CPUs; 1 = in this process); "
        "with --executor ray, the most runs in flight at once",
    )
    p.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="where runs execute: local processes (default), or Ray tasks "
        "(pip install 'iotbench[cluster]'; see docs/cluster.md)",
    )
    p.add_argument(
        "--address",
        metavar="HOST:PORT",
        help="with --executor ray: the Ray cluster's address (default: a Ray instance "
        "started on this machine, or the cluster in RAY_ADDRESS)",
    )


def build_parser() -> argparse.ArgumentParser:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="iotbench",
        description="IoT application protocols under modelled network conditions, in virtual time.",
        epilog=MAIN_EPILOG,
        formatter_class=formatter,
    )
    parser.add_argument("--version", action="version", version=f"iotbench {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add_list_command(commands, formatter)
    _add_show_command(commands, formatter)
    _add_run_command(commands, formatter)
    _add_topology_command(commands, formatter)
    _add_report_command(commands, formatter)
    _add_compare_command(commands, formatter)
    _add_reproduce_command(commands, formatter)
    add_real_commands(commands, formatter, serve=cmd_serve, client=cmd_client, shim=cmd_shim)
    add_emulate_command(commands, formatter, _add_selection, cmd_emulate)
    _add_bench_command(commands, formatter)
    return parser


def _add_list_command(commands, formatter: type) -> None:
    p = commands.add_parser("list", help="list the built-in scenarios", formatter_class=formatter)
    p.set_defaults(handler=cmd_list)


def _add_show_command(commands, formatter: type) -> None:
    p = commands.add_parser(
        "show",
        help="print a scenario and the runs it expands to",
        description="Print the scenario's TOML and the list of runs it expands to.",
        epilog=SELECT_EPILOG
        + "\nexample:\n  iotbench show s3-robustness --filter variant=coap-non\n",
        formatter_class=formatter,
    )
    _add_selection(p)
    p.set_defaults(handler=cmd_show)


def _add_run_command(commands, formatter: type) -> None:
    p = commands.add_parser(
        "run",
        help="run a scenario's sweep and store the results",
        description="Run every run of a scenario (axes x repetitions) and store each\n"
        "finished run in OUT/results.duckdb.",
        epilog=RUN_EPILOG,
        formatter_class=formatter,
    )
    _add_selection(p)
    _add_execution(p)
    p.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="output directory (default: results/<scenario-name>)",
    )
    p.add_argument(
        "--pcap",
        action="store_true",
        help="write a pcap per run to OUT/pcap/, named <scenario>_<axis=value>..._rep<N>_<run-key>",
    )
    p.add_argument(
        "--series",
        action="store_true",
        help="radio networks: write OUT/series/<run>.csv per run (named as the pcaps), "
        "each node's energy and MAC/PHY counters every network.radio.series_interval_s, "
        "<run>.links.csv, the MAC counters per link, and <run>.frames.csv, the frames "
        "per link and message type",
    )
    _add_check_books(p)
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object per finished run on stdout (JSON Lines), runs stored "
        "by an earlier invocation included; progress and tables go to stderr",
    )
    p.set_defaults(handler=cmd_run)


def _add_check_books(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--check-books",
        action="store_true",
        help="keep each run's books (world/books.py): the radios', MACs' and items' own "
        "counts against what the media carried; a run whose books do not balance (a "
        "bug in the model) fails, naming every difference, and is not stored",
    )


def _add_topology_command(commands, formatter: type) -> None:
    p = commands.add_parser(
        "topology",
        help="draw a radio network: its nodes, links and routing tree",
        description="Build a scenario's radio network as a run would (same seed, same\n"
        "shadowing) and draw it into a PNG: nodes, links with a reception ratio of at\n"
        "least 50 %%, and the routing tree: RPL's after --rpl-time simulated seconds\n"
        "(no workload runs), or the static tree of least ETX. Runs whose networks differ\n"
        "need a --filter that picks one network.",
        epilog="example:\n  iotbench topology docs/examples/multihop-coap.toml --out topology.png\n",
        formatter_class=formatter,
    )
    _add_selection(p)
    p.add_argument(
        "--out", type=Path, metavar="FILE", default=Path("topology.png"), help="PNG file to write"
    )
    p.add_argument(
        "--rpl-time",
        type=float,
        default=120.0,
        metavar="S",
        help="with RPL, draw the tree RPL has built after S simulated seconds (default 120)",
    )
    p.set_defaults(handler=cmd_topology)


def _add_report_command(commands, formatter: type) -> None:
    p = commands.add_parser(
        "report",
        help="tables, plots and an HTML page from stored results",
        description="Print summary tables and write DIR/report/*.png and DIR/report/index.html.",
        epilog="example:\n  iotbench report results/s1-object-download --open\n",
        formatter_class=formatter,
    )
    p.add_argument("dir", type=Path, metavar="DIR", help="an output directory of `iotbench run`")
    p.add_argument("--open", action="store_true", help="open index.html in a web browser")
    p.set_defaults(handler=cmd_report)


def _add_compare_command(commands, formatter: type) -> None:
    p = commands.add_parser(
        "compare",
        help="the studies' published figures against ours, from stored results",
        description="For every figure the studies published (and we release), print the\n"
        "published value, ours from the stored runs of the matching scenario and point,\n"
        "the difference and a verdict: agrees (within the figure's stated exactness:\n"
        "a printed number to its last digit, 'about' within 10 %, a range, a bound, or a\n"
        "finding's checks over our metrics), differs, or not run (with the command that\n"
        "makes the runs it needs). docs/studies/ explains every difference.",
        epilog="examples:\n"
        "  iotbench compare                          results/ (every run's folder below it)\n"
        "  iotbench compare results/reproduce        after `iotbench reproduce`\n"
        "  iotbench compare results/s6-delay-sweep --study S6\n"
        "  iotbench compare results --json           one JSON object per figure\n",
        formatter_class=formatter,
    )
    p.add_argument(
        "dir",
        type=Path,
        nargs="?",
        default=Path("results"),
        metavar="RESULTS",
        help="a results folder, or a folder of them (default: results)",
    )
    p.add_argument(
        "--study", default=None, metavar="S1,S6", help="only these studies (default: all)"
    )
    p.add_argument("--json", action="store_true", help="one JSON object per figure")
    p.set_defaults(handler=cmd_compare)


def _add_reproduce_command(commands, formatter: type) -> None:
    p = commands.add_parser(
        "reproduce",
        help="run every built-in scenario of the studies and write one report",
        description="Run every built-in scenario of the chosen studies (all by default) into\n"
        "one folder, then write one report (OUT/report/index.html) that links every\n"
        "study's tables and figures. --quick runs each scenario's reduced version\n"
        "(fewer items, shorter runs: its [quick] table) for a first look in about three\n"
        "minutes on two cores. It ends with one line per study: how many of the figures\n"
        "the study published agree with ours (`iotbench compare` shows them all).\n"
        "Re-running skips what is stored.",
        epilog="examples:\n"
        "  iotbench reproduce --quick                 a first look at every study\n"
        "  iotbench reproduce --study S1,S3 --jobs 2  two studies, in full\n"
        "  iotbench reproduce --executor ray --address head:6379 --out /shared/repro\n\n"
        "exit status: 0 all runs stored, 1 some runs failed (see OUT/errors.log),\n"
        "2 usage error, 130 interrupted.\n",
        formatter_class=formatter,
    )
    p.add_argument(
        "--study",
        metavar="S1,S3,...",
        help="the studies to reproduce, comma-separated (default: all built-in studies)",
    )
    p.add_argument("--quick", action="store_true", help="the reduced version of each scenario")
    p.add_argument("--pcap", action="store_true", help="write a pcap per run to OUT/pcap/")
    _add_check_books(p)
    p.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="output directory (default: results/reproduce, or results/reproduce-quick)",
    )
    _add_execution(p)
    p.set_defaults(handler=cmd_reproduce)


def _add_bench_command(commands, formatter: type) -> None:
    p = commands.add_parser(
        "bench",
        help="micro-benchmarks of the protocol stacks",
        description="ndn-api: S5's NDN API benchmark. Operations per second of this NDN stack\n"
        "and of python-ndn doing the same operation on the same input (checked to give the\n"
        "same result), and their ratio (> 1: iotbench is faster). Needs python-ndn:\n"
        "pip install 'iotbench[test]'. Takes about 15 x S seconds.",
        epilog="examples:\n"
        "  iotbench bench ndn-api\n"
        "  iotbench bench ndn-api --seconds 0.2 --json      one JSON object per operation\n",
        formatter_class=formatter,
    )
    p.add_argument("benchmark", choices=sorted(BENCHMARKS), help="which benchmark")
    p.add_argument(
        "--seconds",
        type=positive_float,
        default=1.0,
        metavar="S",
        help="measuring time per operation, both sides together (default: %(default)s)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object per operation (JSON Lines) instead of a table",
    )
    p.set_defaults(handler=cmd_bench)


def _add_selection(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "scenario",
        metavar="NAME|FILE",
        help="a built-in scenario name (see `iotbench list`) or a .toml file",
    )
    add_filter_option(p, "keep only these values of a sweep axis (repeatable)", "AXIS=V[,V2]")
    add_set_option(p, "override a base config key, e.g. workload.items=50 (repeatable)")
    p.add_argument(
        "--reps",
        type=positive_int,
        metavar="N",
        help="repetitions per combination (default: the scenario's)",
    )
    p.add_argument(
        "--rep",
        type=non_negative_int,
        metavar="K",
        help="only repetition K (from 0) of each combination, the seed it always has "
        "(a failed run's command uses it)",
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except UserError as exc:
        # Plain print: one unwrapped line, whatever the terminal width.
        print(f"iotbench: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except BrokenPipeError:
        # The reader of our output went away (`| head -1`): stop quietly, as Unix
        # tools do. The store stays consistent: a run is stored before it is printed.
        if not _output_closed():
            raise  # a socket's, not our output's: a real error
        _discard_output()
        return EXIT_BROKEN_PIPE


def _output_closed() -> bool:
    """Whether stdout or stderr is a pipe whose reader has gone."""
    for stream in (sys.stdout, sys.stderr):
        try:
            fd = stream.fileno()
        except (AttributeError, OSError, ValueError):
            continue
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        if any(mask & select.POLLERR for _, mask in poller.poll(0)):
            return True
    return False


def _discard_output() -> None:
    # Python flushes stdout at exit; into a closed pipe that is one more
    # BrokenPipeError and a message on stderr. Point both at /dev/null instead.
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            os.dup2(devnull, stream.fileno())
        except (AttributeError, OSError, ValueError):
            pass


# --- commands -----------------------------------------------------------------


def cmd_list(args: argparse.Namespace) -> int:
    table = Table(title="Built-in scenarios")
    for column in ("name", "study", "runs", "description"):
        table.add_column(column, justify="right" if column == "runs" else "left")
    for name in list_builtin():
        scenario = load_scenario(name)
        runs = len(expand(scenario))
        table.add_row(name, scenario.study or "", str(runs), scenario.description)
    print_table(console(), table)
    return EXIT_OK


def _select(args: argparse.Namespace) -> tuple[Scenario, list[Run]]:
    scenario = load_scenario(args.scenario)
    filters: dict[str, list[str]] = {}
    for text in args.filter:
        axis, values = parse_filter(text)
        filters.setdefault(axis, []).extend(values)
    runs = expand(scenario, filters, _overrides(args), args.reps)
    if args.rep is not None:
        if not any(run.repetition == args.rep for run in runs):
            runs = expand(scenario, filters, _overrides(args), args.rep + 1)
        runs = [run for run in runs if run.repetition == args.rep]
    return scenario, runs


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    return dict(parse_override(text) for text in args.overrides)


def cmd_show(args: argparse.Namespace) -> int:
    scenario, runs = _select(args)
    out = console()
    sys.stdout.write(scenario.text if scenario.text.endswith("\n") else scenario.text + "\n")
    sys.stdout.flush()
    axes = [axis.name for axis in scenario.axes]
    table = Table(title=f"{scenario.name}: {len(runs)} runs")
    for column in ["#", *axes, "rep", "seed", "run key"]:
        table.add_column(column, no_wrap=column in ("seed", "run key"))
    for i, run in enumerate(runs, start=1):
        cells = [str(run.params[a]) for a in axes]
        table.add_row(str(i), *cells, str(run.repetition), str(run.seed), run.key)
    out.print()
    print_table(out, table)
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    # Imported here so `list`, `show` and `--help` start fast.
    from iotbench.report.tables import rich_table, summarize
    from iotbench.runner import run_campaign
    from iotbench.world import check_networks

    if args.address and args.executor != "ray":
        raise UserError("--address is the Ray cluster's: give it with --executor ray")
    scenario, runs = _select(args)
    check_networks((run.config for run in runs), scenario.label)
    out = args.out or Path("results") / scenario.name
    err = console(stderr=True)
    tables = err if args.json else console()
    finished = 0

    def on_result(result: RunResult) -> None:
        nonlocal finished
        finished += 1
        if args.json:
            sys.stdout.write(json.dumps(_json_line(result), allow_nan=False) + "\n")
            sys.stdout.flush()

    try:
        result = run_campaign(
            scenario,
            runs,
            out,
            jobs=args.jobs,
            executor=args.executor,
            address=args.address,
            pcap=args.pcap,
            series=args.series,
            on_result=on_result,
            console=err,
            overrides=_overrides(args),
            run_fn=_books_run_fn() if args.check_books else None,
            rerun_flags=["--check-books"] if args.check_books else [],
        )
    except KeyboardInterrupt:
        err.print(
            f"\ninterrupted: {finished} finished runs are stored in {out}; "
            "run the same command again to continue",
            highlight=False,
            soft_wrap=True,
        )
        return EXIT_INTERRUPTED
    axes = [axis.to_json() for axis in scenario.axes]
    pairs = [(r.run.params, r.metrics) for r in result.results]
    if pairs:
        summary = summarize(pairs, axes, scenario.report["metrics"])
        print_table(tables, rich_table(summary, title=scenario.name, fit=tables.is_terminal))
    err.print(
        f"{len(runs)} runs: {result.executed} executed, {result.skipped} already stored, "
        f"{len(result.failures)} failed; results in {out}",
        highlight=False,
        soft_wrap=True,
    )
    _report_time_limits(err, result.results)
    if result.failures:
        _report_failures(err, result.failures, out)
        return EXIT_RUN_FAILED
    return EXIT_OK


def _books_run_fn() -> RunFn:
    """`run_one` with the run's books kept (imported only when asked for)."""
    from iotbench.world.books import run_one_with_books

    return run_one_with_books


def _report_time_limits(err: Console, results: Sequence[RunResult]) -> None:
    """Name the runs that `max_sim_time_s` ended before their work was done: their
    metrics cover only what they did (metric hit_time_limit = 1)."""
    cut = [r.run for r in results if r.metrics.get("hit_time_limit")]
    if not cut:
        return
    err.print(
        f"[yellow]{len(cut)} runs hit max_sim_time_s[/yellow] before their workload was "
        "done; their metrics cover only what they did (hit_time_limit = 1). Raise "
        "max_sim_time_s (--set max_sim_time_s=...) to let them finish:",
        highlight=False,
        soft_wrap=True,
    )
    for run in cut[:10]:
        err.print(f"  {run.scenario} {run.label()}", highlight=False, markup=False)
    if len(cut) > 10:
        err.print(f"  and {len(cut) - 10} more", highlight=False)


def _report_failures(err: Console, failures: Sequence[RunFailure], out: Path) -> None:
    """Name every failed run, its error and the command that runs it again (the
    store keeps them too, with the tracebacks, which errors.log also has)."""
    err.print(
        f"[red]{len(failures)} runs failed[/red]; tracebacks in {out / 'errors.log'}",
        highlight=False,
        soft_wrap=True,
    )
    for failure in failures:
        err.print(
            f"  {failure.run.scenario} {failure.run.label()}: {failure.error}\n"
            f"    run it again: {failure.command}",
            highlight=False,
            soft_wrap=True,
            markup=False,
        )


def _json_line(result: RunResult) -> dict:
    run = result.run
    return {
        "scenario": run.scenario,
        "params": run.params,
        "repetition": run.repetition,
        "seed": run.seed,
        # JSON has no NaN: a metric a run could not measure is null.
        "metrics": {k: (v if math.isfinite(v) else None) for k, v in result.metrics.items()},
    }


def cmd_topology(args: argparse.Namespace) -> int:
    from iotbench.report.topology import draw_network
    from iotbench.world import check_networks

    scenario, runs = _select(args)
    if runs and not is_radio(runs[0].config["network"]):
        raise UserError(f"{scenario.label}: not a radio network (network.topology is pair)")
    run = one_network(runs, scenario.label)
    check_networks([run.config], scenario.label)
    summary = draw_network(run.config, args.out, scenario.name, args.rpl_time)
    print(
        f"{args.out}: {summary['nodes']} nodes, gateway {summary['gateway']}, "
        f"{summary['producers']} producers, routing tree depth {summary['tree_depth']} "
        f"(mean {summary['hops_mean']:.2f} hops; {summary['routing']})"
    )
    if summary["unreached"]:
        print(f"not in the tree: {', '.join(summary['unreached'])}")
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from iotbench.report import build_report

    index = build_report(args.dir, console())
    console(stderr=True).print(f"wrote {index}", highlight=False)
    if args.open:
        webbrowser.open(index.resolve().as_uri())
    return EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    from iotbench.runner.reproduce import parse_studies
    from iotbench.validation import compare, load_studies, stored_runs
    from iotbench.validation.render import comparison_json, comparison_table

    studies = load_studies()
    if args.study:
        wanted = parse_studies(args.study, [s.study for s in studies])
        studies = [s for s in studies if s.study in wanted]
    results = compare(studies, stored_runs(args.dir))
    if args.json:
        for line in comparison_json(results):
            print(json.dumps(line, ensure_ascii=False))
        return EXIT_OK
    out = console()
    for result in results:
        print_table(out, comparison_table(result))
    for result in results:
        out.print(result.summary(), highlight=False)
    return EXIT_OK


def _published_summary(out: Path, studies: list[str]) -> list[str]:
    """One line per study: how many of its published figures ours agree with."""
    from iotbench.validation import compare, load_studies, stored_runs

    chosen = [s for s in load_studies() if s.study in studies]
    lines = [r.summary() for r in compare(chosen, stored_runs(out))]
    if lines:
        lines.append(f"`iotbench compare {out}` shows every figure")
    return lines


def cmd_reproduce(args: argparse.Namespace) -> int:
    import time

    from iotbench.report import build_report
    from iotbench.runner import run_campaign
    from iotbench.runner.campaign import write_errors_log
    from iotbench.runner.reproduce import builtin_studies, parse_studies, study_plan
    from iotbench.world import check_networks

    if args.address and args.executor != "ray":
        raise UserError("--address is the Ray cluster's: give it with --executor ray")
    studies = parse_studies(args.study, list(builtin_studies()))
    plan = study_plan(studies, quick=args.quick)
    for step in plan:  # every network checked before anything runs
        check_networks((run.config for run in step.runs), step.scenario.label)
    out = args.out or Path("results") / ("reproduce-quick" if args.quick else "reproduce")
    err = console(stderr=True)
    table = Table(title=f"iotbench reproduce{' --quick' if args.quick else ''}: {out}")
    for column in ("study", "scenario", "runs", "executed", "stored before", "failed", "wall s"):
        table.add_column(column, justify="left" if column in ("study", "scenario") else "right")
    failures = []
    results: list[RunResult] = []
    for step in plan:
        start = time.perf_counter()
        try:
            result = run_campaign(
                step.scenario,
                step.runs,
                out,
                jobs=args.jobs,
                pcap=args.pcap,
                console=err,
                executor=args.executor,
                address=args.address,
                overrides=step.overrides,
                run_fn=_books_run_fn() if args.check_books else None,
                rerun_flags=["--check-books"] if args.check_books else [],
            )
        except KeyboardInterrupt:
            err.print(
                f"\ninterrupted: the finished runs are stored in {out}; "
                "run the same command again to continue",
                highlight=False,
                soft_wrap=True,
            )
            return EXIT_INTERRUPTED
        failures += result.failures
        results += result.results
        table.add_row(
            step.study,
            step.scenario.name,
            str(len(step.runs)),
            str(result.executed),
            str(result.skipped),
            str(len(result.failures)),
            f"{time.perf_counter() - start:.1f}",
        )
    write_errors_log(out, failures)  # each campaign wrote only its own
    index = build_report(out, err)
    print_table(console(), table)
    for line in _published_summary(out, studies):
        console().print(line, highlight=False)
    err.print(f"report: {index}", highlight=False, soft_wrap=True)
    _report_time_limits(err, results)
    if failures:
        _report_failures(err, failures, out)
        return EXIT_RUN_FAILED
    return EXIT_OK


def _real_cli() -> Any:
    # Imported on use so that the simulation commands never load asyncio drivers.
    return importlib.import_module("iotbench.real.cli")


def cmd_serve(args: argparse.Namespace) -> int:
    return _real_cli().serve(args) or EXIT_OK


def cmd_client(args: argparse.Namespace) -> int:
    return _real_cli().client(args) or EXIT_OK


def cmd_emulate(args: argparse.Namespace) -> int:
    return int(importlib.import_module("iotbench.emulate.cli").run(args, _select))


def cmd_shim(args: argparse.Namespace) -> int:
    return importlib.import_module("iotbench.real.shim_cli").run(args)


def cmd_bench(args: argparse.Namespace) -> int:
    # Imported on use: a benchmark may load a peer library the other commands never need.
    return importlib.import_module(BENCHMARKS[args.benchmark]).main(args.seconds, args.json)


if __name__ == "__main__":
    sys.exit(main())
