"""The simulated world of one run, from a validated scenario config.

- networks/: the network (a point-to-point pair, or a radio network from a
  topology, with its devices and uplinks);
- protocols/: each protocol's server and client set-up on a network;
- workloads/: what the run asks of the network (request loops, an object
  download, the publish workload, group queries), one class per kind;
- run.py: `run_one`, which puts them together and collects the metrics;
- books.py: a run's books, its own counts against what its media carried
  (`iotbench run --check-books`).
"""

from __future__ import annotations

from iotbench.world.run import check_networks, run_one

__all__ = ["check_networks", "run_one"]
