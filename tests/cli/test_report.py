"""`iotbench report`: terminal tables, PNG plots and a self-contained index.html."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from iotbench import cli
from iotbench.report import build_report, summarize
from iotbench.runner import run_campaign
from iotbench.scenarios import expand, load_scenario, parse_scenario

EXAMPLE = Path(__file__).parents[1] / "scenarios" / "example.toml"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def fake_run(config: dict, seed: int, pcap_path: str | None = None) -> dict[str, float | int]:
    size = config["workload"]["object_size_bytes"]
    con = config["protocol"]["coap"]["type"] == "con"
    return {
        "time_s": size / 1000 + (seed % 1000) / 1e6 + (0.5 if con else 0.0),
        "bytes": size + (80 if con else 40),
    }


@pytest.fixture
def results(tmp_path: Path) -> Path:
    scenario = load_scenario(EXAMPLE)
    run_campaign(scenario, expand(scenario), tmp_path, run_fn=fake_run, jobs=1, progress=False)
    return tmp_path


def test_report_writes_pngs_and_index(results: Path, capsys) -> None:
    assert cli.main(["report", str(results)]) == 0
    out = capsys.readouterr().out
    assert "example" in out and "time_s" in out
    report = results / "report"
    pngs = sorted(p.name for p in report.glob("*.png"))
    assert pngs == ["example-1-time_s-vs-size.png", "example-2-bytes-vs-size.png"]
    for name in pngs:
        assert (report / name).read_bytes().startswith(PNG_MAGIC)
    index = (report / "index.html").read_text()
    # Relative links only, so the folder can be moved as it is.
    assert re.findall(r'<img src="([^"]+)"', index) == pngs
    assert "<table>" in index and "Download time" in index
    assert '<td class="axis">con</td><td class="axis">10</td><td class="num">2</td>' in index
    assert str(results) not in index


def test_report_open(results: Path, capsys, monkeypatch) -> None:
    opened = []
    monkeypatch.setattr(cli.webbrowser, "open", opened.append)
    assert cli.main(["report", str(results), "--open"]) == 0
    assert opened == [(results / "report" / "index.html").resolve().as_uri()]


def test_report_notes_missing_metrics_and_facets(tmp_path: Path) -> None:
    text = EXAMPLE.read_text() + (
        '\n[axes.loss.low]\nnetwork = { impair = { to_server = { loss = { model = "none" } } } }\n'
        '[axes.loss.high]\nnetwork = { impair = { to_server = { loss = { model = "bernoulli", '
        "p = 0.1 } } } }\n"
    )
    text = text.replace('y = "bytes"', 'y = "no_such_metric"')
    scenario = parse_scenario(text, label="facets.toml")
    run_campaign(
        scenario, expand(scenario, reps=1), tmp_path, run_fn=fake_run, jobs=1, progress=False
    )
    index = build_report(tmp_path).read_text()
    # The extra `loss` axis gets a panel per value in the one PNG; the bad metric a note.
    assert len(list((tmp_path / "report").glob("*.png"))) == 1
    assert "no run has the metric &#x27;no_such_metric&#x27;" in index


def test_summary_means_and_order() -> None:
    axes = [{"name": "v", "values": ["b", "a"]}]
    runs = [({"v": "a"}, {"m": 1}), ({"v": "b"}, {"m": 5}), ({"v": "a"}, {"m": 3})]
    summary = summarize(runs, axes, ["m"])
    assert [g.params["v"] for g in summary.groups] == ["b", "a"]  # axis order, not data order
    assert [g.n for g in summary.groups] == [1, 2]
    assert summary.groups[1].values["m"] == [1.0, 3.0]


@pytest.mark.parametrize(
    ("name", "lines"),
    [
        ("object_download_time_s", ["object_", "download_", "time_s"]),
        ("time_s", ["time_s"]),
        ("bytes_total", ["bytes_", "total"]),
        ("variant", ["variant"]),
    ],
)
def test_table_headers_stack_at_underscores(name: str, lines: list[str]) -> None:
    from iotbench.report.tables import stacked

    assert stacked(name).split("\n") == lines
    assert stacked(name).replace("\n", "") == name


def test_plot_x_values_select_and_order_the_x_axis(tmp_path: Path) -> None:
    from iotbench.report.plots import plot, select
    from iotbench.report.tables import Group

    groups = [Group({"size": v}, {"m": [float(v)]}, 1) for v in (10, 100, 1000)]
    axes = [{"name": "size", "values": [10, 100, 1000]}]
    spec = {"x": "size", "y": "m", "x_values": [1000, 10], "log_y": True}
    kept, order = select(spec, groups, axes)
    assert [g.params["size"] for g in kept] == [10, 1000]
    assert order["size"] == [1000, 10]
    assert plot(spec, groups, axes, tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes().startswith(PNG_MAGIC)
    assert not plot({**spec, "x_values": []}, groups, axes, tmp_path / "none.png")


def test_report_lists_every_run_in_html_and_csv(results: Path) -> None:
    import csv

    build_report(results, None)
    report = results / "report"
    with (report / "example-runs.csv").open() as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    assert header[:4] == ["variant", "size", "rep", "seed"] and "time_s" in header
    scenario = load_scenario(EXAMPLE)
    assert len(body) == len(expand(scenario))  # one row per run
    assert [r[:3] for r in body[:2]] == [["con", "10", "0"], ["con", "10", "1"]]
    index = (report / "index.html").read_text()
    assert "Every run" in index and 'href="example-runs.csv"' in index


def test_report_draws_s4s_figures_from_the_stored_series(tmp_path: Path) -> None:
    """A short S4 multi-hop campaign (real runs): every figure of the scenario,
    drawn from the store's series table, and the network's picture."""
    scenario = load_scenario("s4-multi-hop")
    runs = expand(scenario, filters={"variant": ["coap-put-con", "ndn"], "interval": ["5s"]})
    for run in runs:
        run.config["workload"]["duration_s"] = 40.0
    run_campaign(scenario, runs, tmp_path, jobs=1, progress=False)
    index = build_report(tmp_path).read_text()
    report = tmp_path / "report"
    figures = sorted(p.name for p in report.glob("s4-multi-hop-series-*.png"))
    assert figures == [
        "s4-multi-hop-series-1-tta_cdf-cdf.png",
        "s4-multi-hop-series-2-goodput_per_s-box.png",
        "s4-multi-hop-series-3-goodput_per_s-time.png",
        "s4-multi-hop-series-4-link_stress-scatter.png",
        "s4-multi-hop-series-5-energy_j-nodes.png",
        "s4-multi-hop-series-6-pit_entries-time.png",
    ]
    assert (report / "s4-multi-hop-topology.png").read_bytes().startswith(PNG_MAGIC)
    for name in figures:
        assert (report / name).read_bytes().startswith(PNG_MAGIC)
        assert f'<img src="{name}"' in index
    assert "on the parents of the tree of least ETX" in index  # RPL, S4's shared tree


def test_a_series_figure_without_its_series_is_a_note(tmp_path: Path) -> None:
    from iotbench.report.series_plots import draw_series
    from iotbench.runner.store import StoredRun

    axes = [{"name": "variant", "values": ["a", "b"]}]
    runs = [StoredRun(k, "t", {"variant": k}, 0, 1, "h", {}, None) for k in ("a", "b")]
    points = {
        "a": [("goodput_per_s", None, 1.0, 3.0, 1), ("offered_per_s", None, 1.0, 4.0, 1)],
        "b": [("goodput_per_s", None, 1.0, 2.0, 1), ("offered_per_s", None, 1.0, 0.0, 1)],
    }
    spec = {"series": "goodput_per_s", "kind": "box", "line": "variant", "filter": {}}
    assert draw_series(
        {**spec, "reference": "offered_per_s"}, runs, points, axes, tmp_path / "b.png"
    )
    assert not draw_series({**spec, "series": "energy_j"}, runs, points, axes, tmp_path / "x.png")
    kept_none = {**spec, "filter": {"variant": ["c"]}}
    assert not draw_series(kept_none, runs, points, axes, tmp_path / "y.png")
    assert sorted(p.name for p in tmp_path.glob("*.png")) == ["b.png"]
    text = EXAMPLE.read_text() + '\n[[report.series]]\nseries = "energy_j"\nkind = "time"\n'
    scenario = parse_scenario(text, label="series.toml")
    run_campaign(
        scenario, expand(scenario, reps=1), tmp_path, run_fn=fake_run, jobs=1, progress=False
    )
    index = build_report(tmp_path).read_text()
    assert "no run has the series &#x27;energy_j&#x27;" in index
