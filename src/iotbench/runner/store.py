"""The results store: one DuckDB file per output directory (OUT/results.duckdb).

Each finished run is written in one transaction, so a crash or Ctrl-C leaves
either the whole run or nothing. Only the parent process opens the file
(DuckDB allows one writing process); workers just return metrics.

Tables (JSON columns hold JSON text; NaN metrics are stored as JSON null):
  meta(key, value)                         schema_version
  scenarios(name, description, source, toml, axes, report, iotbench_version, updated_at)
  runs(run_key, scenario, params, repetition, seed, config_hash, config, metrics,
       pcap, iotbench_version, wall_time_s, finished_at)
  metrics(run_key, scenario, metric, value)   the same metrics in long format, for SQL
  series(run_key, scenario, series, node, x, y, n)   a run's time series and
      distributions, one row per point (metrics/timeseries.py; node NULL: the
      whole network); docs/metrics.md names them
  failures(run_key, scenario, params, repetition, seed, error, traceback, command,
       iotbench_version, failed_at)   the runs that failed (the last failure of
      each, until it runs to the end): the exception, its traceback and the
      command that runs it again

The series and failures tables came after schema version 1 was fixed; adding
a table keeps older files readable and writable (it is created when a file is
opened for writing, and a file without one has none).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self

import duckdb

from iotbench import __version__
from iotbench.metrics.timeseries import SeriesTable
from iotbench.scenarios import Run, Scenario, UserError

SCHEMA_VERSION = "1"
DB_NAME = "results.duckdb"

TABLES = """
CREATE TABLE IF NOT EXISTS meta (key VARCHAR, value VARCHAR);
CREATE TABLE IF NOT EXISTS scenarios (
    name VARCHAR NOT NULL,
    description VARCHAR,
    source VARCHAR,
    toml VARCHAR NOT NULL,
    axes JSON NOT NULL,
    report JSON NOT NULL,
    iotbench_version VARCHAR NOT NULL,
    updated_at TIMESTAMP NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    run_key VARCHAR NOT NULL,
    scenario VARCHAR NOT NULL,
    params JSON NOT NULL,
    repetition INTEGER NOT NULL,
    seed BIGINT NOT NULL,
    config_hash VARCHAR NOT NULL,
    config JSON NOT NULL,
    metrics JSON NOT NULL,
    pcap VARCHAR,
    iotbench_version VARCHAR NOT NULL,
    wall_time_s DOUBLE,
    finished_at TIMESTAMP NOT NULL
);
CREATE TABLE IF NOT EXISTS metrics (
    run_key VARCHAR NOT NULL,
    scenario VARCHAR NOT NULL,
    metric VARCHAR NOT NULL,
    value DOUBLE
);
CREATE TABLE IF NOT EXISTS series (
    run_key VARCHAR NOT NULL,
    scenario VARCHAR NOT NULL,
    series VARCHAR NOT NULL,
    node INTEGER,
    x DOUBLE,
    y DOUBLE,
    n BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS failures (
    run_key VARCHAR NOT NULL,
    scenario VARCHAR NOT NULL,
    params JSON NOT NULL,
    repetition INTEGER NOT NULL,
    seed BIGINT NOT NULL,
    error VARCHAR NOT NULL,
    traceback VARCHAR,
    command VARCHAR NOT NULL,
    iotbench_version VARCHAR NOT NULL,
    failed_at TIMESTAMP NOT NULL
);
"""


class StoreError(UserError):
    """The results file cannot be used (locked, not a results file, conflicting runs)."""


@dataclass(frozen=True)
class StoredRun:
    key: str
    scenario: str
    params: dict[str, Any]
    repetition: int
    seed: int
    config_hash: str
    metrics: dict[str, float | int]
    pcap: str | None  # relative to the output directory


@dataclass(frozen=True)
class StoredFailure:
    key: str
    scenario: str
    params: dict[str, Any]
    repetition: int
    seed: int
    error: str  # one line: "ValueError: ..."
    traceback: str | None
    command: str  # runs it again


@dataclass(frozen=True)
class StoredScenario:
    name: str
    description: str
    toml: str
    axes: list[dict[str, Any]]  # [{"name", "key", "values"}], in file order
    report: dict[str, Any]


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _metrics_json(metrics: Mapping[str, float | int]) -> str:
    # JSON has no NaN/Infinity; null keeps the JSON valid for any reader.
    clean = {k: (v if math.isfinite(v) else None) for k, v in metrics.items()}
    return _json(clean)


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _metrics_from_json(text: str) -> dict[str, float | int]:
    return {k: (math.nan if v is None else v) for k, v in json.loads(text).items()}


class ResultStore:
    """OUT/results.duckdb, opened for writing (the runner) or reading (the report)."""

    def __init__(self, out_dir: str | Path, read_only: bool = False) -> None:
        self.path = Path(out_dir) / DB_NAME
        if read_only and not self.path.is_file():
            raise StoreError(f"{out_dir}: no results here (run `iotbench run ... --out {out_dir}`)")
        try:
            self.con = duckdb.connect(str(self.path), read_only=read_only)
        except duckdb.IOException as exc:
            if "lock" in str(exc).lower():
                raise StoreError(f"{self.path} is in use by another iotbench process") from None
            raise StoreError(f"{self.path}: cannot open: {exc}") from None
        if not read_only:
            self._create()
        self._check_version()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.con.close()

    def _create(self) -> None:
        self.con.execute(TABLES)
        if not self.con.execute("SELECT 1 FROM meta WHERE key = 'schema_version'").fetchall():
            self.con.execute("INSERT INTO meta VALUES ('schema_version', ?)", [SCHEMA_VERSION])

    def _check_version(self) -> None:
        try:
            row = self.con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except duckdb.Error:
            row = None
        if row is None or row[0] != SCHEMA_VERSION:
            found = row[0] if row else "none"
            raise StoreError(
                f"{self.path}: results schema version {found}, this iotbench writes "
                f"{SCHEMA_VERSION}; use another output directory"
            )

    def _transaction(self, statements: Iterable[tuple[str, Sequence[Any]]]) -> None:
        self.con.execute("BEGIN TRANSACTION")
        try:
            for sql, args in statements:
                self.con.execute(sql, list(args))
            self.con.execute("COMMIT")
        except BaseException:
            self.con.execute("ROLLBACK")
            raise

    # --- writing --------------------------------------------------------------

    def save_scenario(self, scenario: Scenario) -> None:
        """Store (or replace) the scenario, so the report can read its axes and plots."""
        row = [
            scenario.name,
            scenario.description,
            scenario.source,
            scenario.text,
            _json([axis.to_json() for axis in scenario.axes]),
            _json(scenario.report),
            __version__,
            datetime.now(UTC).replace(tzinfo=None),
        ]
        self._transaction(
            [
                ("DELETE FROM scenarios WHERE name = ?", [scenario.name]),
                ("INSERT INTO scenarios VALUES (?, ?, ?, ?, ?, ?, ?, ?)", row),
            ]
        )

    def add_run(
        self,
        run: Run,
        metrics: Mapping[str, float | int],
        pcap: str | None = None,
        wall_time_s: float | None = None,
        series: SeriesTable | None = None,
    ) -> None:
        """Store one finished run (replacing an earlier copy), with its series rows,
        in one transaction."""
        names = list(metrics)
        values = [float(metrics[name]) for name in names]
        row = [
            run.key,
            run.scenario,
            _json(run.params),
            run.repetition,
            run.seed,
            run.config_hash,
            _json(run.config),
            _metrics_json(metrics),
            pcap,
            __version__,
            wall_time_s,
            datetime.now(UTC).replace(tzinfo=None),
        ]
        statements: list[tuple[str, Sequence[Any]]] = [
            ("DELETE FROM runs WHERE run_key = ?", [run.key]),
            ("DELETE FROM metrics WHERE run_key = ?", [run.key]),
            ("DELETE FROM series WHERE run_key = ?", [run.key]),
            ("DELETE FROM failures WHERE run_key = ?", [run.key]),
            ("INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row),
        ]
        if names:
            statements.append(
                (
                    "INSERT INTO metrics SELECT ?, ?, unnest(?::VARCHAR[]), unnest(?::DOUBLE[])",
                    [run.key, run.scenario, names, values],
                )
            )
        if series:
            # Column by column: one statement however many points (NaN -> NULL).
            statements.append(
                (
                    "INSERT INTO series SELECT ?, ?, unnest(?::VARCHAR[]), "
                    "nullif(unnest(?::INTEGER[]), -1), unnest(?::DOUBLE[]), "
                    "unnest(?::DOUBLE[]), unnest(?::BIGINT[])",
                    [
                        run.key,
                        run.scenario,
                        series.names,
                        list(series.node),
                        [_finite(v) for v in series.x],
                        [_finite(v) for v in series.y],
                        list(series.n),
                    ],
                )
            )
        self._transaction(statements)

    def add_failure(self, run: Run, error: str, traceback: str | None, command: str) -> None:
        """Record that `run` failed (replacing an earlier failure of it); a later run
        of it that finishes removes the record (add_run)."""
        row = [
            run.key,
            run.scenario,
            _json(run.params),
            run.repetition,
            run.seed,
            error,
            traceback,
            command,
            __version__,
            datetime.now(UTC).replace(tzinfo=None),
        ]
        self._transaction(
            [
                ("DELETE FROM failures WHERE run_key = ?", [run.key]),
                ("INSERT INTO failures VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row),
            ]
        )

    # --- reading --------------------------------------------------------------

    def failures(self, scenario: str | None = None) -> list[StoredFailure]:
        """The runs whose last attempt failed, in the order they failed."""
        if not self._has_table("failures"):
            return []
        query = (
            "SELECT run_key, scenario, params, repetition, seed, error, traceback, command "
            "FROM failures"
        )
        args: list[Any] = []
        if scenario is not None:
            query += " WHERE scenario = ?"
            args.append(scenario)
        rows = self.con.execute(query + " ORDER BY failed_at, run_key", args).fetchall()
        return [
            StoredFailure(key, name, json.loads(params), rep, seed, error, tb, command)
            for key, name, params, rep, seed, error, tb, command in rows
        ]

    def stored_pcaps(self, keys: Iterable[str]) -> dict[str, str | None]:
        """For each of `keys` already stored: its pcap path (or None)."""
        keys = list(keys)
        if not keys:
            return {}
        rows = self.con.execute(
            "SELECT run_key, pcap FROM runs WHERE list_contains(?::VARCHAR[], run_key)", [keys]
        ).fetchall()
        return dict(rows)

    def conflicts(self, runs: Sequence[Run]) -> list[tuple[Run, str]]:
        """Planned runs whose (scenario, params, repetition) is stored with another config.

        Mixing them would average results of different configurations as if
        they were repetitions of one.
        """
        if not runs:
            return []
        rows = self.con.execute(
            "SELECT params, repetition, config_hash FROM runs WHERE scenario = ?",
            [runs[0].scenario],
        ).fetchall()
        stored = {(_canonical(json.loads(p)), rep): h for p, rep, h in rows}
        out = []
        for run in runs:
            other = stored.get((_canonical(run.params), run.repetition))
            if other is not None and other != run.config_hash:
                out.append((run, other))
        return out

    def runs(
        self, scenario: str | None = None, keys: Iterable[str] | None = None
    ) -> list[StoredRun]:
        sql = (
            "SELECT run_key, scenario, params, repetition, seed, config_hash, metrics, pcap "
            "FROM runs WHERE (? IS NULL OR scenario = ?)"
        )
        args: list[Any] = [scenario, scenario]
        if keys is not None:
            sql += " AND list_contains(?::VARCHAR[], run_key)"
            args.append(list(keys))
        rows = self.con.execute(sql + " ORDER BY scenario, finished_at, run_key", args).fetchall()
        return [
            StoredRun(
                key=key,
                scenario=name,
                params=json.loads(params),
                repetition=rep,
                seed=seed,
                config_hash=cfg_hash,
                metrics=_metrics_from_json(metrics),
                pcap=pcap,
            )
            for key, name, params, rep, seed, cfg_hash, metrics, pcap in rows
        ]

    def configs(self, scenario: str) -> dict[str, dict[str, Any]]:
        """Each stored run's full configuration, by run key."""
        rows = self.con.execute(
            "SELECT run_key, config FROM runs WHERE scenario = ?", [scenario]
        ).fetchall()
        return {key: json.loads(config) for key, config in rows}

    def series(
        self, scenario: str, names: Sequence[str] | None = None
    ) -> dict[str, list[tuple[str, int | None, float | None, float | None, int]]]:
        """The scenario's series points by run key, each run's in the order it
        wrote them: (series, node, x, y, n); only the series in `names` if given."""
        if not self._has_table("series"):
            return {}  # a file from before the series table
        rows = self.con.execute(
            "SELECT run_key, series, node, x, y, n FROM series WHERE scenario = ? "
            "AND (?::VARCHAR[] IS NULL OR list_contains(?::VARCHAR[], series)) "
            "ORDER BY run_key, rowid",
            [scenario, names, names],
        ).fetchall()
        out: dict[str, list[tuple[str, int | None, float | None, float | None, int]]] = {}
        for key, *point in rows:
            out.setdefault(key, []).append(tuple(point))
        return out

    def _has_table(self, name: str) -> bool:
        return bool(
            self.con.execute(
                "SELECT 1 FROM information_schema.tables WHERE table_name = ?", [name]
            ).fetchall()
        )

    def versions(self, scenario: str) -> list[str]:
        """The iotbench versions that made the scenario's stored runs."""
        rows = self.con.execute(
            "SELECT DISTINCT iotbench_version FROM runs WHERE scenario = ? ORDER BY 1", [scenario]
        ).fetchall()
        return [version for (version,) in rows]

    def scenarios(self) -> list[StoredScenario]:
        rows = self.con.execute(
            "SELECT name, description, toml, axes, report FROM scenarios ORDER BY name"
        ).fetchall()
        return [
            StoredScenario(name, desc or "", toml, json.loads(axes), json.loads(report))
            for name, desc, toml, axes, report in rows
        ]


def _canonical(params: Mapping[str, Any]) -> str:
    return json.dumps(params, sort_keys=True)
