"""TCP stacks on simulated nodes: real segments on links, ports, RST, Fast Open."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from iotbench.metrics.observers import Observers, PacketRecorder
from iotbench.metrics.pcap import pcap_bytes
from iotbench.net.impairments import BernoulliLoss, Impairment
from iotbench.net.link import PointToPointLink
from iotbench.net.node import Node
from iotbench.net.tcp import Closed, Connected, DataReceived, PeerClosed, TcpParams, TcpStack
from iotbench.net.tcp.segment import ACK, Segment, decode
from iotbench.sim import Simulator


def network(seed=1, loss=0.0, mtu=1500, params=None):
    sim = Simulator(seed)
    log = []
    a, b = Node(sim, "client"), Node(sim, "server")
    ia, ib = a.add_interface("10.0.0.1", mtu), b.add_interface("10.0.0.2", mtu)
    imp = (lambda n: Impairment(loss=BernoulliLoss(sim.rng(n), loss))) if loss else lambda n: None
    PointToPointLink(
        sim,
        ia,
        ib,
        rate_bps=250_000,
        delay_s=0.01,
        observers=Observers(PacketRecorder(log)),
        impair_a_to_b=imp("ab"),
        impair_b_to_a=imp("ba"),
    )
    return sim, log, TcpStack(sim, a, params), TcpStack(sim, b, params), ib.address


def echo_server(stack, port=7):
    def on_accept(sock):
        def on_event(ev):
            if isinstance(ev, DataReceived):
                sock.send(ev.data, header_len=min(4, len(ev.data)))
            elif isinstance(ev, PeerClosed):
                sock.close()

        sock.on_event = on_event

    stack.listen(port, on_accept)


def test_echo_over_real_segments_with_layer_split():
    sim, log, client, server, addr = network()
    echo_server(server)
    got, events = bytearray(), []

    def on_event(ev):
        events.append(type(ev).__name__)
        if isinstance(ev, Connected):
            sock.send(b"HEADbody", header_len=4)
        elif isinstance(ev, DataReceived):
            got.extend(ev.data)
            sock.close()

    sock = client.connect(addr, 7, on_event)
    sim.run(until=100)
    assert bytes(got) == b"HEADbody"
    assert events == ["Connected", "DataReceived", "PeerClosed", "Closed"]
    for p in log:
        seg = decode(p.data[20:], *(p.data[12:16], p.data[16:20]))  # checksum verified
        assert p.transport_header_len == seg.header_len
        assert p.app_header_len == (4 if seg.payload else 0)
    syn = log[0]
    assert syn.transport_header_len == 40 and len(syn.data) == 60  # Linux-like SYN
    assert client.connections == 0 and server.connections == 0  # TIME_WAIT ended


def test_connect_to_a_closed_port_is_refused_with_rst():
    sim, log, client, server, addr = network()
    closed = []
    client.connect(addr, 9999, lambda ev: closed.append(ev))
    sim.run(until=10)
    assert closed == [Closed("refused")]
    assert server.resets_sent == 1
    assert len(log) == 2  # SYN, RST+ACK


def test_segment_for_no_connection_gets_rst():
    sim, log, client, server, addr = network()
    stray = Segment(5000, 80, 1234, 99, ACK, 100, b"late")
    client.transmit((bytes([10, 0, 0, 1]), 5000, addr, 80), stray, 0)
    sim.run(until=1)
    rst = decode(log[-1].data[20:], addr, bytes([10, 0, 0, 1]))
    assert rst.flags == 0x04 and rst.seq == 99  # <SEQ=SEG.ACK><CTL=RST>


def test_fast_open_second_connection_sends_data_in_syn():
    p = TcpParams(fast_open=True)
    sim, log, client, server, addr = network(params=p)
    arrivals = []

    def on_accept(sock):
        sock.on_event = lambda ev: arrivals.append((sim.now, type(ev).__name__))

    server.listen(80, on_accept)
    first = client.connect(addr, 80, lambda ev: None, data=b"one")
    sim.run(until=5)
    first.close()
    sim.run(until=10)
    t0 = sim.now
    client.connect(addr, 80, lambda ev: None, data=b"two")
    sim.run(until=20)
    syns = [p for p in log if p.data[33] & 0x02 and not p.data[33] & 0x10]
    first_syn, second_syn = (decode(p.data[20:], p.data[12:16], p.data[16:20]) for p in syns)
    assert first_syn.fast_open == b"" and not first_syn.payload
    assert second_syn.fast_open == server.cookie_for(bytes([10, 0, 0, 1]))
    assert second_syn.payload == b"two"
    # Data reaches the server application one SYN flight after the connect.
    data_at = [t for t, name in arrivals if name == "DataReceived" and t > t0]
    assert data_at[0] - t0 < 0.02 + 60 * 8 / 250_000 + 0.001


def test_lossy_transfer_is_deterministic_and_complete():
    def run(seed):
        sim, log, client, server, addr = network(seed=seed, loss=0.05)
        got = bytearray()

        def on_accept(sock):
            sock.on_event = lambda ev: got.extend(getattr(ev, "data", b""))

        server.listen(80, on_accept)
        data = bytes(random.Random(1).getrandbits(8) for _ in range(30_000))
        sock = client.connect(addr, 80, lambda ev: None, data=data)
        sock.close()
        sim.run(until=1000)
        return bytes(got) == data, pcap_bytes(log)

    ok1, pcap1 = run(5)
    ok2, pcap2 = run(5)
    ok3, pcap3 = run(6)
    assert ok1 and ok2 and ok3
    assert pcap1 == pcap2 and pcap1 != pcap3


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=100), st.booleans())
def test_random_bytes_into_a_stack_never_raise(data, listening):
    sim, log, client, server, addr = network()
    if listening:
        echo_server(server, 80)
    server._receive(data, bytes([10, 0, 0, 1]), addr)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 2**32 - 1),
            st.integers(0, 2**32 - 1),
            st.integers(0, 0xFF),
            st.integers(0, 0xFFFF),
            st.binary(max_size=20),
            st.booleans(),
        ),
        max_size=15,
    )
)
def test_random_segments_into_an_established_connection_never_raise(segments):
    sim, log, client, server, addr = network()
    echo_server(server, 80)
    sock = client.connect(addr, 80, lambda ev: None)
    sim.run(until=1)
    conn = sock.conn
    for i, (seq, ack, flags, window, payload, near) in enumerate(segments):
        if near:  # keep some inside the window so they reach deep into the logic
            seq = (conn.irs + conn.rcv_nxt + seq % 2000) % 2**32
            ack = (conn.iss + conn.snd_una + ack % 100) % 2**32
        conn.receive(1.0 + i * 0.01, Segment(80, sock.key[1], seq, ack, flags, window, payload))
        conn.handle_timer(2.0 + i)
        conn.segments_to_send()
        conn.events()
