"""RPL objective functions: how a node ranks its neighbours and picks its parent.

Both work on the link ETX a node estimates for each neighbour (node.py).

MRHOF (RFC 6719) with the ETX metric and no metric container: the path cost
through a neighbour is the neighbour's Rank plus the link metric, ETX x 128
(the ETX encoding of RFC 6551); links above MAX_LINK_METRIC (ETX 4) and paths
above MAX_PATH_COST are not used; the node changes parent only for a path
cheaper by PARENT_SWITCH_THRESHOLD (ETX 1.5). Its Rank is the path cost, and
never less than the parent's Rank plus MinHopRankIncrease (RFC 6550 3.5.1).
MinHopRankIncrease is 128 with MRHOF, so one ETX unit is one DAGRank step.

OF0 (RFC 6552): Rank = parent's Rank + (Rf x step_of_rank + Sr) x
MinHopRankIncrease with Rf = 1, Sr = 0 (the RFC's defaults) and a step of
rank from the link (1 to 9). RFC 6552 leaves the mapping from link
properties to the step open; here an ETX of 1 gives the minimum step 1 and
every further expected transmission adds 3 (ETX 3.67 reaches the maximum 9,
beyond which the link is not used). A node changes parent only for a Rank
lower by at least one MinHopRankIncrease. MinHopRankIncrease is 256, RFC
6550's default.
"""

from __future__ import annotations

import math
from typing import Final

OCP_OF0 = 0
OCP_MRHOF = 1


class Mrhof:
    ocp = OCP_MRHOF
    min_hop_rank_increase = 128
    MAX_LINK_METRIC: Final = 512
    MAX_PATH_COST: Final = 32768
    PARENT_SWITCH_THRESHOLD: Final = 192

    def __init__(self, min_hop_rank_increase: int | None = None) -> None:
        if min_hop_rank_increase is not None:
            self.min_hop_rank_increase = min_hop_rank_increase

    @staticmethod
    def link_metric(etx: float) -> float:
        return etx * 128.0

    def acceptable(self, neighbour_rank: int, etx: float) -> bool:
        metric = self.link_metric(etx)
        return metric <= self.MAX_LINK_METRIC and neighbour_rank + metric <= self.MAX_PATH_COST

    def path_cost(self, neighbour_rank: int, etx: float) -> float:
        return neighbour_rank + self.link_metric(etx)

    def rank_via(self, neighbour_rank: int, etx: float) -> int:
        cost = math.ceil(self.path_cost(neighbour_rank, etx))
        return min(0xFFFF, max(cost, neighbour_rank + self.min_hop_rank_increase))

    def switch(self, candidate_cost: float, current_cost: float) -> bool:
        return candidate_cost + self.PARENT_SWITCH_THRESHOLD < current_cost


class Of0:
    ocp = OCP_OF0
    min_hop_rank_increase = 256
    RANK_FACTOR: Final = 1  # Rf
    RANK_STRETCH: Final = 0  # Sr
    MIN_STEP: Final = 1
    MAX_STEP: Final = 9

    def __init__(self, min_hop_rank_increase: int | None = None) -> None:
        if min_hop_rank_increase is not None:
            self.min_hop_rank_increase = min_hop_rank_increase

    @staticmethod
    def step_of_rank(etx: float) -> int:
        return max(Of0.MIN_STEP, round(3.0 * etx - 2.0))

    def acceptable(self, neighbour_rank: int, etx: float) -> bool:
        return self.step_of_rank(etx) <= self.MAX_STEP

    def rank_via(self, neighbour_rank: int, etx: float) -> int:
        increase = self.RANK_FACTOR * self.step_of_rank(etx) + self.RANK_STRETCH
        return min(0xFFFF, neighbour_rank + increase * self.min_hop_rank_increase)

    def path_cost(self, neighbour_rank: int, etx: float) -> float:
        return float(self.rank_via(neighbour_rank, etx))

    def switch(self, candidate_cost: float, current_cost: float) -> bool:
        return candidate_cost + self.min_hop_rank_increase <= current_cost


#: An objective function: either class.
Objective = Mrhof | Of0

OBJECTIVES: dict[str, type[Objective]] = {"mrhof": Mrhof, "of0": Of0}
BY_OCP: dict[int, type[Objective]] = {OCP_MRHOF: Mrhof, OCP_OF0: Of0}
