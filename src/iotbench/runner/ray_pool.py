"""Executing runs as Ray tasks, on a Ray cluster or a Ray instance of this machine.

The counterpart of execute.Pool: the same `execute(run_fn, task)` runs in a
Ray worker and hands back the same `Outcome`, which the driver stores as
runs finish. Only the driver touches the DuckDB store; a worker writes the
run's large outputs (pcap, time series) straight into the output folder,
which therefore must be a path every node can write (shared storage).

Ray is an optional extra (`pip install 'iotbench[cluster]'`); it is imported
only when a campaign asks for it.
"""

from __future__ import annotations

import os
import socket
import traceback
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Self

from iotbench import __version__
from iotbench.runner.execute import Outcome, RunFn, Task, execute
from iotbench.scenarios import UserError


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UserError("--executor ray needs Ray: pip install 'iotbench[cluster]'") from None
    return ray


class RayPool:
    """Runs tasks on Ray and yields their outcomes as they finish.

    `address`: a running cluster's HOST:PORT (or "auto"); None starts a Ray
    instance on this machine with `jobs` CPUs (all of them by default), which
    ends with the pool. `jobs` also bounds the tasks in flight at once.
    `writable`: folders every node must be able to write (the run outputs);
    checked on every node before anything runs.
    """

    def __init__(
        self,
        run_fn: RunFn,
        *,
        address: str | None = None,
        jobs: int | None = None,
        writable: Iterable[Path] = (),
    ) -> None:
        self.ray = import_ray()
        self.run_fn = run_fn
        self.jobs = jobs
        self._pending: dict[Any, Task] = {}  # Ray object ref -> Task, of the tasks in flight
        address = address or os.environ.get("RAY_ADDRESS") or None
        try:
            if address is None:
                self.ray.init(num_cpus=jobs, include_dashboard=False, log_to_driver=False)
            else:
                self.ray.init(address=address, log_to_driver=False)
        except Exception as exc:  # noqa: BLE001 - Ray raises many kinds; all mean "no cluster"
            where = f"at {address}" if address else "on this machine"
            raise UserError(f"cannot start or reach a Ray cluster {where}: {exc}") from None
        self._remote = self.ray.remote(num_cpus=1, max_retries=0)(execute)
        try:
            check_nodes(self.ray, list(writable))
        except BaseException:
            self.ray.shutdown()
            raise

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        # Leaving early (Ctrl-C, a closed pipe): cancel what has not finished.
        if exc_type is not None:
            for ref in self._pending:
                self.ray.cancel(ref, force=True)
        self.ray.shutdown()

    def run(self, tasks: Iterable[Task]) -> Iterator[Outcome]:
        ray = self.ray
        queue = list(tasks)
        queue.reverse()  # pop() from the end takes them in order
        run_fn = ray.put(self.run_fn)
        pending: dict[Any, Task] = {}
        self._pending = pending
        limit = self.jobs or len(queue)
        while queue or pending:
            while queue and len(pending) < limit:
                task = queue.pop()
                pending[self._remote.remote(run_fn, task)] = task
            (done,), _ = ray.wait(list(pending), num_returns=1)
            task = pending.pop(done)
            try:
                yield ray.get(done)
            except ray.exceptions.RayError as exc:  # the worker died, was killed, ran out of memory
                yield Outcome(task.key, None, f"Ray: {_first_line(exc)}", traceback.format_exc())


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def probe(folders: list[str]) -> dict[str, Any]:
    """On one node: its name, iotbench version, and the folders it cannot write."""
    problems = []
    for folder in folders:
        path = os.path.join(folder, f".iotbench-probe-{uuid.uuid4().hex}")
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write("probe")
            os.remove(path)
        except OSError as exc:
            problems.append(f"{folder}: {exc.strerror or exc}")
    return {"host": socket.gethostname(), "version": __version__, "problems": problems}


def check_nodes(ray: Any, folders: list[Path]) -> None:
    """Before any run: every alive node has this iotbench and can write `folders`."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    nodes = [n for n in ray.nodes() if n.get("Alive")]
    remote = ray.remote(num_cpus=0, max_retries=0)(probe)
    refs = [
        remote.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)
        ).remote([str(f) for f in folders])
        for node in nodes
    ]
    for node, report in zip(nodes, ray.get(refs), strict=True):
        where = f"Ray node {report['host']} ({node['NodeManagerAddress']})"
        if report["version"] != __version__:
            raise UserError(
                f"{where} has iotbench {report['version']}, this driver {__version__}: "
                "install the same version on every node"
            )
        if report["problems"]:
            raise UserError(
                f"{where} cannot write the output folder ({'; '.join(report['problems'])}); "
                "with --executor ray, --out must be on storage every node shares and can write"
            )
