"""The schema's choices and the tables that build them agree (docs/contributing.md):
a kind or protocol added on one side only fails here, not minutes into a campaign."""

from __future__ import annotations

from iotbench.scenarios.protocol_schema import PROTOCOLS
from iotbench.scenarios.schema import WORKLOAD
from iotbench.world.protocols import BUILDERS
from iotbench.world.workloads import WORKLOADS


def test_every_workload_kind_has_its_class():
    assert set(WORKLOAD.fields["kind"].choices) == set(WORKLOADS)


def test_every_protocol_has_its_builder():
    assert set(PROTOCOLS) == set(BUILDERS)
