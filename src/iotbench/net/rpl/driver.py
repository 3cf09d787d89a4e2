"""Runs an `RplNode` on a simulated IPv6 node with a 6LoWPAN interface.

The node's ICMPv6 messages of type 155 go to RPL; what RPL sends leaves as
ICMPv6 from the interface's link-local address (DIOs and DIS to the
all-RPL-nodes group, DAOs and DAO-ACKs to a neighbour); the MAC's result for
every unicast frame (acknowledged or not, after how many transmissions)
feeds RPL's link ETX; the node's multicast memberships become DAO targets.
RPL's events set the node's routes: the preferred parent as default route,
a host route for every unicast target below (multicast targets stay in RPL,
where SMRF looks them up).
"""

from __future__ import annotations

from iotbench.net import ieee802154 as mac
from iotbench.net.icmpv6 import (
    ICMPV6_HEADER_LEN,
    ICMPV6_RPL,
    IPPROTO_ICMPV6,
    Icmpv6DecodeError,
    build_icmpv6,
    parse_icmpv6,
)
from iotbench.net.ip import build_ipv6
from iotbench.net.lowpan.codec import compress
from iotbench.net.lowpan.interface import LowpanInterface, address_of, mac_of
from iotbench.net.mac.csma import CHANNEL_ACCESS_FAILURE, SENT
from iotbench.net.node import HOP_LIMIT, LINK_LOCAL_PREFIX, Node, is_multicast
from iotbench.net.rpl.node import (
    DAO_BASE_BYTES,
    DAO_TARGET_BYTES,
    ParentChanged,
    RouteAdded,
    RouteRemoved,
    RplNode,
)
from iotbench.sim import Simulator
from iotbench.sim.deadline import DeadlineTimer


def dao_targets_per_frame(iface: LowpanInterface) -> int:
    """How many DAO targets fit one 802.15.4 frame from `iface` to a neighbour: the
    MAC header and FCS, the (compressed) IPv6 header between link-local addresses,
    ICMPv6's header and the DAO's own bytes come first."""
    address = iface.mac.address
    empty = build_ipv6(iface.link_local, iface.link_local, IPPROTO_ICMPV6, b"", hop_limit=HOP_LIMIT)
    ip_header = len(compress(empty, address, address, mode=iface.compression).header)
    room = (
        mac.MAX_FRAME_BYTES
        - mac.header_length(address, len(address))
        - mac.FCS_BYTES
        - ip_header
        - ICMPV6_HEADER_LEN
        - DAO_BASE_BYTES
    )
    return max(1, room // DAO_TARGET_BYTES)


class RplDriver:
    def __init__(self, sim: Simulator, node: Node, iface: LowpanInterface, rpl: RplNode) -> None:
        self.sim = sim
        self.node = node
        self.iface = iface
        self.rpl = rpl
        self.icmpv6_errors = 0
        self._timer = DeadlineTimer(sim, self._on_timer)
        node.protocols[IPPROTO_ICMPV6] = self._on_icmpv6
        iface.mac.on_sent = self._on_sent
        node.group_listeners.append(self._on_group)
        node.loop_check = self._loop_check

    def start(self) -> None:
        self.rpl.start(self.sim.now)
        self.pump()

    def parent_link_address(self) -> bytes | None:
        """The MAC address of the preferred parent (SMRF accepts multicast from it only)."""
        parent = self.rpl.preferred_parent
        return mac_of(parent, len(self.iface.mac.address)) if parent is not None else None

    def members_below(self, group: bytes) -> bool:
        return self.rpl.next_hop(group) is not None

    # ------------------------------------------------------------ inputs

    def _on_icmpv6(self, segment: bytes, src: bytes, dst: bytes) -> None:
        try:
            kind, code, body = parse_icmpv6(segment, src, dst)
        except Icmpv6DecodeError:
            self.icmpv6_errors += 1
            return
        if kind == ICMPV6_RPL:
            self.rpl.receive(self.sim.now, src, dst, code, body)
            self.pump()

    def _on_sent(self, dst: bytes, status: str, transmissions: int) -> None:
        # A frame the MAC never sent (the channel stayed busy) says nothing about the
        # link: Contiki's link statistics (rpl_link_neighbor_callback) take only
        # acknowledged and unacknowledged transmissions, and so does ETX here.
        if status == CHANNEL_ACCESS_FAILURE:
            return
        neighbour = address_of(LINK_LOCAL_PREFIX, dst)
        if self.rpl.link_result(self.sim.now, neighbour, status == SENT, transmissions):
            self.pump()

    def _loop_check(self, link_src: bytes | None, next_hop: bytes | None) -> bool:
        """A packet going up that came from the parent it would go back to: a loop."""
        if link_src is None or next_hop is None or next_hop != self.rpl.preferred_parent:
            return False
        if address_of(LINK_LOCAL_PREFIX, link_src) != next_hop:
            return False
        self.rpl.loop_detected(self.sim.now)
        self.pump()
        return True

    def _on_group(self, group: bytes, joined: bool) -> None:
        if joined:
            self.rpl.add_target(self.sim.now, group)
        else:
            self.rpl.remove_target(self.sim.now, group)
        self.pump()

    def _on_timer(self) -> None:
        self.rpl.handle_timer(self.sim.now)
        self.pump()

    # ------------------------------------------------------------ outputs

    def pump(self) -> None:
        rpl, node, iface = self.rpl, self.node, self.iface
        for dst, code, body in rpl.messages_to_send():
            message = build_icmpv6(iface.link_local, dst, ICMPV6_RPL, code, body)
            node.send_ip(iface, dst, IPPROTO_ICMPV6, message, ICMPV6_HEADER_LEN, len(body))
        for event in rpl.events():
            if isinstance(event, ParentChanged):
                node.set_default_route(iface if event.parent else None, event.parent)
            elif isinstance(event, RouteAdded):
                if not is_multicast(event.target):
                    node.add_route(event.target, iface, event.next_hop)
            elif isinstance(event, RouteRemoved):
                node.remove_route(event.target)
        self._timer.set(rpl.next_timer())
