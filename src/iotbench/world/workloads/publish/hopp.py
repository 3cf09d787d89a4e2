"""The publish workload over HoPP (S4's `hopp`): names pushed up the tree, Data pulled hop by hop.

HoPP (HoP-and-Pull, Gündoğan et al.) as its reference implementation does
it (RIOT's `sys/net/routing/hopp` with COMPAS; docs/ndn.md lists what it
leaves open and what iotbench chose), on every node of the radio network:

Its timers and tables are `protocol.ndn.hopp` (HoppParams); the
defaults are the reference's, the values in parentheses here, and S4's
scenarios set those of the study's ndn_hopp app.

- Tree. The gateway is the root and content proxy (rank 1). It advertises
  its prefix in PAMs on a Trickle timer (Imin 64 ms, 16 doublings, k = 5).
  A node that hears its parent's PAM takes rank + 1 and, when its rank
  changed, broadcasts a SOL and a PAM of its own. A node without a parent
  sends a SOL every 4 to 5 s, unicast to its parent four times, then
  broadcast. After its third SOL it also runs Trickle, and it floats
  (ignores SOLs) until a PAM takes it in. A neighbour with a rank answers a
  SOL with a unicast PAM. A parent not heard from for 30 to 35 s is asked
  again with a SOL. S4 shares one routing tree between all variants, so a
  node takes the PAMs of its parent in the shared tree only; every other
  PAM is heard and counted, as the reference counts those of its Trickle.
- Publishing. A producer puts each reading as a Data into its Content Store
  and sends a NAM with its name to its parent. A node that gets a NAM pulls
  the Data at once with an Interest straight to the sender's face (no FIB
  route). When a Data whose name it holds comes from a neighbour (CCN-lite's
  data-received callback), the puller sends its own NAM to its parent at
  once (also when the same Data came before); so the name goes up hop by
  hop, each hop pulling, until the gateway has the Data. A NAM is sent again
  every 1 to 1.5 s until the parent pulls, 3 NAMs in all; then the node asks
  its parent with a SOL, and the parent's PAM starts the NAMs again a NAM
  period later. A Data that a node's own Content Store gives its pull (a
  repeated NAM's) stays there: nothing goes up. A node forgets a name once
  its Content Store answers a neighbour's Interest for it (CCN-lite's
  data-send callback). A full NAM cache makes room by dropping a name not
  heard of for 10 s, else drops the new one, and does not answer SOLs.
- Subscribing. The subscriber runs on the gateway, beside the proxy. A
  reading is delivered when a Data whose name the proxy holds comes from a
  child.

PAMs and SOLs are control traffic (`control_bytes`); NAMs, the pulls'
Interests and their Data are the publishing (`data_bytes`). The pulls are
retransmitted hop by hop by the forwarders
(`protocol.ndn.retx_max`, `retx_interval_s`). Each message costs the node
a forwarding decision of CPU time (its device profile).
"""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING

from iotbench.apps.readings import reading_counter
from iotbench.proto.ndn.data import Data
from iotbench.scenarios.settings_types import ProtocolNdnHoppSettings, RunSettings
from iotbench.sim import Simulator
from iotbench.world.networks import RadioNetwork
from iotbench.world.workloads.publish.hopp_agent import HoppAgent, HoppParams
from iotbench.world.workloads.publish.ndn import NdnSender, NdnTree

if TYPE_CHECKING:
    from iotbench.world.workloads.publish.sender import Publisher


HOPP_KEYS = {f.name for f in fields(HoppParams)}


def hopp_params(cfg: ProtocolNdnHoppSettings | None) -> HoppParams:
    """`protocol.ndn.hopp` as HoppParams (absent keys, or no section: the reference's
    defaults)."""
    if cfg is None:
        return HoppParams()
    given = cfg.as_kwargs()
    return HoppParams(**{k: v for k, v in given.items() if v is not None and k in HOPP_KEYS})


class NdnHopp(NdnSender):
    """hopp: HoPP on every node; the gateway is the content proxy and the subscriber."""

    drives = "push"

    def __init__(
        self, work: Publisher, sim: Simulator, net: RadioNetwork, config: RunSettings
    ) -> None:
        self.work = work
        self.sim = sim
        self.tree = tree = NdnTree(sim, net, config)
        ndn = config.protocol.ndn
        self.params = hopp_params(ndn.hopp if ndn is not None else None)
        self.lifetime_ms = tree.lifetime_ms
        self.prefix_uri = tree.prefix.to_uri()  # the content proxy's: the gateway's
        self.producers = tree.producers
        self.nam_drops = 0
        self.decode_errors = 0
        shared = net.tree
        ids = list(net.hosts)
        index = {name: i for i, name in enumerate(ids)}
        self.agents: dict[str, HoppAgent] = {}
        for name, node in tree.nodes.items():
            parent = shared.parent[index[name]]
            parent_address = None if parent is None else net.address(net.hosts[ids[parent]])
            iface = net.l2_interface(net.hosts[name])
            faces = {net.address(net.hosts[peer]): face for peer, face in node.faces.items()}
            self.agents[name] = HoppAgent(
                self, name, node, iface, parent_address, sim.rng(f"hopp/{name}"), faces
            )
        # A node pulls from the NAM's sender's face, no route needed; HoPP sets
        # /<prefix> towards the parent (hopp_handle_pam), which the pulls do not use.
        tree.hopp_routes(down=False)
        tree.pump_all()

    def start(self) -> None:
        for agent in self.agents.values():
            agent.start()

    def send(self, producer: int, rid: int, payload: bytes) -> None:
        tree = self.tree
        data = tree.data(producer, tree.reading_name(producer, reading_counter(rid)), payload)
        agent = self.agents[tree.producer_names[producer]]
        node = tree.producers[producer]
        node.cpu.run(tree.create_data_s(node), lambda: agent.publish(data))

    @property
    def messages_sent(self) -> int:
        """HoPP messages (SOL, PAM, NAM) all agents sent."""
        return sum(agent.messages_sent for agent in self.agents.values())

    @property
    def pulls(self) -> int:
        """Interests the agents expressed for advertised names."""
        return sum(agent.pulls for agent in self.agents.values())

    def protocol_metrics(self) -> dict[str, float | int]:
        return {"nam_cache_drops": self.nam_drops}

    def delivered(self, data: Data) -> None:
        self.work.arrived(data.content)
