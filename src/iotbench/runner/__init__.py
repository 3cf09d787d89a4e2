"""Runner: executes the runs of a scenario (in process or in a process pool),
shows progress and stores each finished run in OUT/results.duckdb.

    runs = expand(load_scenario("s1-object-download"))
    result = run_campaign(scenario, runs, "results/s1-object-download", jobs=4)
"""

from iotbench.runner.campaign import (
    CampaignResult,
    RunFailure,
    RunResult,
    default_jobs,
    run_campaign,
)
from iotbench.runner.execute import RunFn, load_default_run_fn
from iotbench.runner.store import DB_NAME, ResultStore, StoredRun, StoredScenario, StoreError

__all__ = [
    "DB_NAME",
    "CampaignResult",
    "ResultStore",
    "RunFailure",
    "RunFn",
    "RunResult",
    "StoreError",
    "StoredRun",
    "StoredScenario",
    "default_jobs",
    "load_default_run_fn",
    "run_campaign",
]
