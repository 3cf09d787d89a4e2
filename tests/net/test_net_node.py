"""Hosts end to end: UDP over a point-to-point link, fragmentation, layers, ports."""

from __future__ import annotations

import pytest

from iotbench.metrics.observers import Observers, PacketRecorder
from iotbench.net import ip
from iotbench.net.link import PointToPointLink
from iotbench.net.node import Interface, Node
from iotbench.net.packet import DELIVERED, Packet, split_layers
from iotbench.sim import Simulator

ADDRESSES = {4: ("10.0.0.1", "10.0.0.2"), 6: ("fd00::1", "fd00::2")}


class Pair:
    def __init__(self, version: int, mtu: int = 1500, seed: int = 0, **link_kw) -> None:
        self.sim = Simulator(seed)
        self.client = Node(self.sim, "client")
        self.server = Node(self.sim, "server")
        ca, sa = ADDRESSES[version]
        self.client_if = self.client.add_interface(ca, mtu)
        self.server_if = self.server.add_interface(sa, mtu)
        self.log: list[Packet] = []
        self.link = PointToPointLink(
            self.sim,
            self.client_if,
            self.server_if,
            observers=Observers(PacketRecorder(self.log)),
            **link_kw,
        )
        self.got: list[tuple] = []

    def listen(self, node: Node, port: int) -> None:
        node.udp_bind(
            port,
            lambda payload, src, sport, dport, dst: self.got.append(
                (self.sim.now, payload, src, sport, dport)
            ),
        )


def _payload(n: int) -> bytes:
    return bytes((i * 31 + 7) % 256 for i in range(n))


@pytest.mark.parametrize("version", [4, 6])
def test_small_datagram_end_to_end(version):
    net = Pair(version, rate_bps=8000, delay_s=0.25)
    net.listen(net.server, 5683)
    net.client.udp_send(40000, net.server.address, 5683, b"hello", app_header_len=2)
    net.sim.run()
    header = 20 if version == 4 else 40
    assert net.got == [
        (0.25 + (header + 8 + 5) * 8 / 8000, b"hello", net.client.address, 40000, 5683)
    ]
    (pkt,) = net.log
    assert pkt.fate == DELIVERED
    assert (pkt.ip_header_len, pkt.transport_header_len, pkt.app_header_len) == (header, 8, 2)
    assert pkt.payload_len == 3
    assert pkt.size == header + 13
    # The bytes on the wire are a valid IP/UDP packet with a correct checksum.
    if version == 4:
        h = ip.parse_ipv4(pkt.data, verify=True)
        assert (h.src, h.dst, h.proto) == (net.client.address, net.server.address, 17)
    else:
        h = ip.parse_ipv6(pkt.data)
        assert (h.src, h.dst, h.next_header, h.fragmented) == (
            net.client.address,
            net.server.address,
            17,
            False,
        )
    assert ip.parse_udp(pkt.data[header:], net.client.address, net.server.address, verify=True) == (
        40000,
        5683,
        b"hello",
    )


@pytest.mark.parametrize(
    "version,sizes",
    [
        # IPv4, MTU 128: 104 data bytes per fragment; 1008 = 9 * 104 + 72.
        (4, [124] * 9 + [92]),
        # IPv6, MTU 128: 80 data bytes per fragment (Fragment header); 1008 = 12 * 80 + 48.
        (6, [128] * 12 + [96]),
    ],
)
def test_datagram_larger_than_mtu_is_fragmented_and_delivered_once(version, sizes):
    net = Pair(version, mtu=128, rate_bps=0, delay_s=0.01)
    net.listen(net.server, 9000)
    payload = _payload(1000)
    net.client.udp_send(40000, net.server.address, 9000, payload, app_header_len=4)
    net.sim.run()
    assert [(p, s, sp, dp) for _, p, s, sp, dp in net.got] == [
        (payload, net.client.address, 40000, 9000)
    ]
    assert [len(p.data) for p in net.log] == sizes
    assert all(p.fate == DELIVERED and len(p.data) <= 128 for p in net.log)
    assert len(net.server.reassembler) == 0
    # All fragments share one identification.
    if version == 4:
        idents = {ip.parse_ipv4(p.data, verify=True).ident for p in net.log}
    else:
        idents = {ip.parse_ipv6(p.data).ident for p in net.log}
    assert len(idents) == 1


@pytest.mark.parametrize("version", [4, 6])
@pytest.mark.parametrize("app_header_len", [0, 4, 100, 300])
def test_fragment_layer_split(version, app_header_len):
    net = Pair(version, mtu=128)
    net.listen(net.server, 9000)
    payload = _payload(1000)
    net.client.udp_send(1, net.server.address, 9000, payload, app_header_len=app_header_len)
    net.sim.run()
    assert len(net.got) == 1
    header = 20 if version == 4 else 48
    start = 0
    for pkt in net.log:
        body = len(pkt.data) - header
        assert pkt.ip_header_len == header
        # Reference split of the IP payload [start, start + body):
        # bytes [0, 8) UDP header, [8, 8 + app) app header, the rest payload.
        transport = len(range(max(start, 0), min(start + body, 8)))
        app = len(range(max(start, 8), min(start + body, 8 + app_header_len)))
        assert (pkt.transport_header_len, pkt.app_header_len) == (transport, app)
        assert pkt.payload_len == body - transport - app
        assert pkt.payload_len >= 0
        assert (
            pkt.ip_header_len + pkt.transport_header_len + pkt.app_header_len + pkt.payload_len
        ) == pkt.size
        start += body
    assert start == 1008
    assert net.log[0].transport_header_len == 8
    assert all(p.transport_header_len == 0 for p in net.log[1:])
    # Summed over fragments, the upper layers equal the original datagram's.
    assert sum(p.transport_header_len for p in net.log) == 8
    assert sum(p.app_header_len for p in net.log) == app_header_len
    assert sum(p.payload_len for p in net.log) == 1000 - app_header_len
    assert sum(p.ip_header_len for p in net.log) == header * len(net.log)
    if app_header_len == 100 and version == 4:
        # The application header spans the first fragment boundary: 96 + 4 bytes.
        assert [p.app_header_len for p in net.log[:3]] == [96, 4, 0]


def test_split_layers_reference_cases():
    assert split_layers(0, 104, 8, 4) == (8, 4)
    assert split_layers(0, 104, 8, 200) == (8, 96)
    assert split_layers(104, 104, 8, 200) == (0, 104)
    assert split_layers(208, 104, 8, 200) == (0, 0)
    assert split_layers(0, 4, 8, 4) == (4, 0)  # a fragment inside the transport header
    assert split_layers(0, 10, 8, 4) == (8, 2)
    assert split_layers(8, 8, 20, 0) == (8, 0)


@pytest.mark.parametrize("version", [4, 6])
def test_lost_fragment_means_no_delivery(version):
    net = Pair(version, mtu=128)
    net.listen(net.server, 9000)

    class ThirdLost:
        """A loss model that loses the third fragment only."""

        sent = 0

        def lost(self) -> bool:
            self.sent += 1
            return self.sent == 3

    net.link.a_to_b.impairment.loss = ThirdLost()
    net.client.udp_send(1, net.server.address, 9000, _payload(1000))
    net.sim.run()
    assert net.got == []
    assert len(net.server.reassembler) == 1  # held until the reassembly timeout


def test_consecutive_datagrams_use_new_identifications():
    net = Pair(4, mtu=128)
    net.listen(net.server, 9000)
    for _ in range(3):
        net.client.udp_send(1, net.server.address, 9000, _payload(300))
    net.sim.run()
    assert len(net.got) == 3
    idents = [ip.parse_ipv4(p.data).ident for p in net.log]
    assert len(set(idents)) == 3
    first = idents[0]
    assert sorted(set(idents)) == sorted({first, (first + 1) & 0xFFFF, (first + 2) & 0xFFFF})


def test_no_listener_is_counted_and_nothing_delivered():
    net = Pair(4)
    net.listen(net.server, 1)
    net.client.udp_send(40000, net.server.address, 2, b"nobody")
    net.sim.run()
    assert net.got == []
    assert net.server.udp_no_listener == 1
    assert net.server.ip_decode_errors == 0
    assert [p.fate for p in net.log] == [DELIVERED]  # it did cross the link


def test_ephemeral_ports():
    sim = Simulator(0)
    node = Node(sim, "n")
    node.add_interface("10.0.0.1", 1500)

    def handler(*args):
        return None

    assert node.udp_bind_ephemeral(handler) == 49152
    assert node.udp_bind_ephemeral(handler) == 49153
    node.udp_bind(49154, handler)
    node.udp_bind(49155, handler)
    assert node.udp_bind_ephemeral(handler) == 49156
    with pytest.raises(ValueError):
        node.udp_bind(49152, handler)


def test_reply_to_ephemeral_source_port():
    net = Pair(6)
    replies = []
    port = net.client.udp_bind_ephemeral(
        lambda payload, src, sport, dport, dst: replies.append((payload, src, sport, dport))
    )
    net.server.udp_bind(
        5683,
        lambda payload, src, sport, dport, dst: net.server.udp_send(
            dport, src, sport, payload[::-1]
        ),
    )
    net.client.udp_send(port, net.server.address, 5683, b"ping")
    net.sim.run()
    assert replies == [(b"gnip", net.server.address, 5683, port)]


def test_routes_choose_the_interface():
    sim = Simulator(0)
    hub = Node(sim, "hub")
    left, right = Node(sim, "left"), Node(sim, "right")
    log: list[Packet] = []
    h0 = hub.add_interface("10.0.1.1", 1500)
    h1 = hub.add_interface("10.0.2.1", 1500)
    PointToPointLink(
        sim, h0, left.add_interface("10.0.1.2", 1500), observers=Observers(PacketRecorder(log))
    )
    PointToPointLink(
        sim, h1, right.add_interface("10.0.2.2", 1500), observers=Observers(PacketRecorder(log))
    )
    hub.add_route("10.0.2.2", h1)
    got = []
    right.udp_bind(7, lambda payload, src, sport, dport, dst: got.append(("right", src)))
    left.udp_bind(7, lambda payload, src, sport, dport, dst: got.append(("left", src)))
    hub.udp_send(7, ip.address_bytes("10.0.2.2"), 7, b"r")
    hub.udp_send(7, ip.address_bytes("10.0.1.2"), 7, b"l")  # default interface
    sim.run()
    assert got == [("right", h1.address), ("left", h0.address)]
    assert hub.address == h0.address


def test_no_interface_is_counted_as_no_route():
    node = Node(Simulator(0), "lonely")
    node.udp_send(1, ip.address_bytes("10.0.0.9"), 2, b"x")
    assert node.no_route == 1


def test_other_protocols_can_register():
    net = Pair(4)
    seen = []
    net.server.protocols[253] = lambda segment, src, dst: seen.append((segment, src, dst))
    net.client.send_ip(net.client_if, net.server.address, 253, b"experimental", 0, 0)
    net.sim.run()
    assert seen == [(b"experimental", net.client.address, net.server.address)]


class RecordingInterface(Interface):
    """An interface that keeps what it is asked to send: (data, layers...) per call.
    (Its send is overridden in a subclass: a compiled Interface takes no patches.)"""

    def __init__(self, node: Node, address: str) -> None:
        super().__init__(node, f"{node.name}-rec", ip.address_bytes(address), 1280)
        self.calls: list[tuple] = []

    def send(self, data, *layers) -> None:
        self.calls.append((data, *layers))


def recording_interface(node: Node, address: str) -> RecordingInterface:
    iface = RecordingInterface(node, address)
    node.attach_interface(iface)
    return iface


def test_a_packet_going_up_is_dropped_when_routing_calls_it_a_loop():
    """A forwarder asks routing about each packet it sends up its default route; one
    that routing calls a loop (it came back from where it would go) is dropped."""
    sim = Simulator(0)
    node = Node(sim, "relay")
    up = recording_interface(node, "fd00::1")
    node.forwarding = True
    node.set_default_route(up, b"parent")
    asked: list[tuple] = []

    def loop_check(link_src, next_hop):
        asked.append((link_src, next_hop))
        return link_src == b"parent-mac"

    node.loop_check = loop_check
    packet = ip.build_ipv6(
        ip.address_bytes("fd00::9"), ip.address_bytes("fd01::2"), ip.IPPROTO_UDP, bytes(8)
    )
    node.receive_ip(packet, b"child-mac")
    node.receive_ip(packet, b"parent-mac")
    assert len(up.calls) == 1 and node.looped == 1 and node.forwarded == 1
    assert asked == [(b"child-mac", b"parent"), (b"parent-mac", b"parent")]


def test_a_link_local_packet_is_never_forwarded():
    """RFC 4291 2.5.6: a forwarder that gets a packet to or from a link-local address
    not its own (a broadcast frame carried it) drops it."""
    sim = Simulator(0)
    node = Node(sim, "relay")
    up = recording_interface(node, "fd00::1")
    node.forwarding = True
    node.set_default_route(up, b"parent")
    to_neighbour = ip.build_ipv6(
        ip.address_bytes("fe80::19"), ip.address_bytes("fe80::1c"), ip.IPPROTO_UDP, bytes(8)
    )
    from_neighbour = ip.build_ipv6(
        ip.address_bytes("fe80::19"), ip.address_bytes("fd01::2"), ip.IPPROTO_UDP, bytes(8)
    )
    node.receive_ip(to_neighbour, b"br-mac")
    node.receive_ip(from_neighbour, b"br-mac")
    assert up.calls == [] and node.link_scope_dropped == 2 and node.forwarded == 0


def test_a_link_local_destination_is_its_own_next_hop_on_the_chosen_interface():
    """A border router's default route is its uplink; a message it sends out of its
    radio to a child's link-local address goes to that child, not to everyone."""
    sim = Simulator(0)
    node = Node(sim, "br")
    radio = recording_interface(node, "fd00::19")
    uplink = node.add_interface("fd01::1", 1280)
    node.set_default_route(uplink, None)
    child = ip.address_bytes("fe80::1c")
    node.send_ip(radio, child, ip.IPPROTO_ICMPV6, bytes(8), 4, 0)
    assert [call[-1] for call in radio.calls] == [child]
