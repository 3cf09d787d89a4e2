"""TCP: the segment codec (`tcp-segment`) and the connection's state machine
(`tcp-connection`), net/tcp/segment.py and net/tcp/connection.py."""

from __future__ import annotations

import math
import random
import struct

from fuzz_targets.common import Codec, StackCase, mutate, randbytes
from iotbench.codec_agreement import V4_A, V4_B, udp_addresses
from iotbench.net.checksum import internet_checksum
from iotbench.net.ip import IPPROTO_TCP, pseudo_header_sum
from iotbench.net.tcp import connection as tcp
from iotbench.net.tcp import segment as wire
from iotbench.net.tcp.connection import TcpConnection
from iotbench.net.tcp.events import Closed, DataReceived
from iotbench.net.tcp.params import TcpParams
from iotbench.net.tcp.segment import ACK, CWR, ECE, FIN, PSH, RST, SYN, URG, Segment

MOD = 1 << 32
_FLAGS = (
    SYN,
    SYN | ACK,
    ACK,
    ACK | PSH,
    ACK | FIN,
    ACK | PSH | FIN,
    RST,
    RST | ACK,
    FIN,
    SYN | FIN,
    SYN | RST,
    ACK | URG,
    ACK | ECE | CWR,
    0,
)


# ---- the segment codec ---------------------------------------------------------------


def _options(rng: random.Random, seg: Segment) -> None:
    """Set some of the options a segment may carry (each possibly absent)."""
    if rng.random() < 0.4:
        seg.mss = rng.choice((536, 1220, 1460, 0, 0xFFFF, rng.randrange(0x10000)))
    if rng.random() < 0.3:
        seg.wscale = rng.randrange(15)
    seg.sack_permitted = rng.random() < 0.3
    if rng.random() < 0.5:
        seg.timestamps = (rng.randrange(MOD), rng.randrange(MOD))
    if rng.random() < 0.3:
        seg.sack_blocks = tuple(
            (rng.randrange(MOD), rng.randrange(MOD)) for _ in range(rng.randint(1, 4))
        )
    if rng.random() < 0.2:
        seg.fast_open = rng.choice((b"", randbytes(rng, rng.randint(4, 16))))
    while True:  # drop options until they fit the 40 bytes
        try:
            wire.options_bytes(seg)
            return
        except ValueError:
            if seg.sack_blocks:
                seg.sack_blocks = seg.sack_blocks[1:]
            else:
                seg.fast_open = None


def random_segment(rng: random.Random) -> Segment:
    seg = Segment(
        rng.choice((80, 443, rng.randrange(0x10000))),
        rng.choice((40000, rng.randrange(0x10000))),
        rng.randrange(MOD),
        rng.randrange(MOD),
        rng.choice(_FLAGS) if rng.random() < 0.8 else rng.randrange(256),
        rng.choice((0, 1, 0xFFFF, 64240 >> 7, rng.randrange(0x10000))),
        randbytes(rng, rng.choice((0, 0, 1, rng.randrange(100)))),
        urgent=rng.choice((0, 0, rng.randrange(0x10000))),
    )
    _options(rng, seg)
    return seg


def _other_layout(rng: random.Random, seg: Segment) -> bytes:
    """seg's options in another valid layout: any order, NOPs anywhere, unknown
    options, an End of Option List with anything after it."""
    parts = []
    if seg.mss is not None:
        parts.append(struct.pack("!BBH", wire.OPT_MSS, 4, seg.mss))
    if seg.wscale is not None:
        parts.append(bytes((wire.OPT_WSCALE, 3, rng.choice((seg.wscale, 15, 255)))))
    if seg.sack_permitted:
        parts.append(bytes((wire.OPT_SACK_PERMITTED, 2)))
    if seg.timestamps is not None:
        parts.append(struct.pack("!BBII", wire.OPT_TIMESTAMPS, 10, *seg.timestamps))
    if seg.sack_blocks:
        blocks = b"".join(struct.pack("!II", *b) for b in seg.sack_blocks)
        parts.append(bytes((wire.OPT_SACK, 2 + len(blocks))) + blocks)
    if seg.fast_open is not None:
        parts.append(bytes((wire.OPT_FAST_OPEN, 2 + len(seg.fast_open))) + seg.fast_open)
    for _ in range(rng.choice((0, 0, 1, 2))):
        kind = rng.choice((6, 7, 19, 28, 29, 30, 253, 254, rng.randrange(9, 256)))
        parts.append(bytes((kind, 0)) + randbytes(rng, rng.randrange(5)))
        parts[-1] = parts[-1][:1] + bytes((len(parts[-1]),)) + parts[-1][2:]
    rng.shuffle(parts)
    out = b""
    for part in parts:
        out += bytes((wire.OPT_NOP,)) * rng.choice((0, 0, 1, 2)) + part
    if rng.random() < 0.3:
        out += bytes((wire.OPT_EOL,)) + randbytes(rng, rng.randrange(4))
    out += bytes(-len(out) % 4)
    return out[: wire.MAX_OPTIONS_LEN - (wire.MAX_OPTIONS_LEN % 4)]


def _with_options(seg: Segment, options: bytes, src: bytes, dst: bytes) -> bytes:
    header_len = wire.HEADER_LEN + len(options)
    header = struct.pack(
        "!HHIIBBHHH",
        seg.src_port,
        seg.dst_port,
        seg.seq,
        seg.ack,
        (header_len // 4) << 4,
        seg.flags,
        seg.window,
        0,
        seg.urgent,
    )
    return fix_checksum(src, dst, header + options + seg.payload)


def fix_checksum(src: bytes, dst: bytes, data: bytes) -> bytes:
    if len(data) < wire.HEADER_LEN:
        return data
    body = data[:16] + b"\0\0" + data[18:]
    checksum = internet_checksum(body, pseudo_header_sum(src, dst, IPPROTO_TCP, len(body)))
    return body[:16] + checksum.to_bytes(2, "big") + body[18:]


def valid_tcp_segment(rng: random.Random) -> bytes:
    """A byte choosing IPv4 or IPv6 addresses (as for UDP), then a segment: its
    options in the Linux layout `encode` writes, or in another valid one."""
    selector = rng.randrange(256)
    src, dst = udp_addresses(selector)
    seg = random_segment(rng)
    if rng.random() < 0.6:
        data = wire.encode(seg, src, dst)
    else:
        data = _with_options(seg, _other_layout(rng, seg), src, dst)
    return bytes((selector,)) + data


def fix_tcp_segment(data: bytes) -> bytes:
    if len(data) < 1 + wire.HEADER_LEN:
        return data
    src, dst = udp_addresses(data[0])
    return data[:1] + fix_checksum(src, dst, data[1:])


def check_tcp_segment(data: bytes) -> bool:
    """Input: a byte choosing IPv4 or IPv6 addresses, then a segment.
    decode(b) accepted => encode(decode(b)) decodes to an equal Segment, and is b
    itself when b's options are in the Linux layout; or encode raises ValueError
    because that layout of these options needs more than 40 bytes (b may pack them
    tighter, without the NOPs)."""
    if not data:
        return False
    src, dst = udp_addresses(data[0])
    body = data[1:]
    try:
        seg = wire.decode(body, src, dst)
    except wire.TcpDecodeError:
        return False
    header_len = seg.header_len  # (encode sets it to its own)
    assert header_len == (body[12] >> 4) * 4
    assert seg.payload == body[header_len:]
    try:
        again = wire.encode(seg, src, dst)
    except ValueError as exc:
        assert "exceed" in str(exc), f"encode refused a decoded segment: {exc}"
        return True
    back = wire.decode(again, src, dst)
    assert back == seg, f"{back} != {seg}"
    if body[wire.HEADER_LEN : header_len] == wire.options_bytes(seg):
        assert again == body, "re-encoding differs"
    return True


CODECS = [Codec("tcp-segment", valid_tcp_segment, check_tcp_segment, 64, fix_tcp_segment)]


# ---- the connection state machine -------------------------------------------------------

STATES = frozenset(
    {
        tcp.CLOSED,
        tcp.LISTEN,
        tcp.SYN_SENT,
        tcp.SYN_RECEIVED,
        tcp.ESTABLISHED,
        tcp.FIN_WAIT_1,
        tcp.FIN_WAIT_2,
        tcp.CLOSE_WAIT,
        tcp.CLOSING,
        tcp.LAST_ACK,
        tcp.TIME_WAIT,
    }
)
CLIENT_PORT, SERVER_PORT = 40000, 80
COOKIE = b"fuzzcook"
_DELTAS = (0, 0, 0, 1, -1, 2, 100, -100, 1000, -1000, 65535, -65536, 1 << 31, (1 << 31) - 1)


class _End:
    """One end of the connection and what the fuzz knows about it."""

    def __init__(self, name: str, params: TcpParams) -> None:
        self.name = name
        self.params = params
        self.conn: TcpConnection | None = None
        self.closed = False  # Closed reported
        self.received = bytearray()  # what the application got
        self.sent = bytearray()  # what the application gave
        self.rcv_nxt = 0
        self.conns = 0

    def new(self, conn: TcpConnection) -> TcpConnection:
        self.conn = conn
        self.closed = False
        self.received.clear()
        self.sent.clear()
        self.rcv_nxt = 0
        self.conns += 1
        return conn

    @property
    def live(self) -> bool:
        return self.conn is not None and not self.conn.finished


def _params(rng: random.Random) -> TcpParams:
    return rng.choice(
        (
            TcpParams(),
            TcpParams(mss_bytes=536, receive_buffer_bytes=2000, wscale=0, initial_rto_s=0.5),
            TcpParams(
                sack=False,
                timestamps=False,
                window_scale=False,
                delayed_ack=False,
                nagle=False,
                ack="rfc5681",
                rto="rfc6298",
                receive_buffer_bytes=3000,
                time_wait_s=2.0,
                fin_wait_2_s=3.0,
            ),
            TcpParams(fast_open=True, receive_buffer_bytes=1500, syn_retries=2, wscale=14),
            TcpParams(max_retransmissions=2, synack_retries=1, min_rto_s=0.05, ack="rfc5681"),
        )
    )


def _forge(rng: random.Random, to: _End, model: Segment | None) -> Segment:
    """A segment for the connection of `to`: a copy of one its peer sent, or one made
    up around its sequence space, with seq/ack, flags, window, options, payload moved."""
    conn = to.conn
    if model is not None and rng.random() < 0.6:
        seg = Segment(**{f: getattr(model, f) for f in Segment.__dataclass_fields__})
        seg.payload = bytes(seg.payload)
    else:
        seg = Segment(
            0, 0, (conn.irs + conn.rcv_nxt) % MOD, (conn.iss + conn.snd_una) % MOD, ACK, 0
        )
        seg.window = rng.choice((0, 1, 500, 0xFFFF))
        seg.payload = randbytes(rng, rng.choice((0, 1, 10, 536, 1400)))
    seg.src_port, seg.dst_port = (
        (SERVER_PORT, CLIENT_PORT) if to.name == "client" else (CLIENT_PORT, SERVER_PORT)
    )
    r = rng.random()
    if r < 0.4:
        seg.seq = (seg.seq + rng.choice(_DELTAS)) % MOD
    elif r < 0.5:
        seg.seq = rng.randrange(MOD)
    r = rng.random()
    if r < 0.4:
        seg.ack = (seg.ack + rng.choice(_DELTAS)) % MOD
    elif r < 0.5:
        seg.ack = rng.randrange(MOD)
    if rng.random() < 0.3:
        seg.flags = rng.choice(_FLAGS) if rng.random() < 0.8 else rng.randrange(256)
    elif rng.random() < 0.2:
        seg.flags ^= rng.choice((SYN, FIN, RST, PSH, ACK))
    if rng.random() < 0.2:
        seg.window = rng.choice((0, 1, 0xFFFF, rng.randrange(0x10000)))
    if rng.random() < 0.2:
        seg.payload = mutate(seg.payload, rng)[:1500]
    if rng.random() < 0.2:
        seg.mss = seg.wscale = seg.timestamps = seg.fast_open = None
        seg.sack_permitted, seg.sack_blocks = False, ()
        _options(rng, seg)
    if rng.random() < 0.3 and conn.sack_ok:  # SACK blocks in the window the peer holds
        base = conn.iss + conn.snd_una
        seg.sack_blocks = tuple(
            ((base + a) % MOD, (base + a + rng.randrange(1, 3000)) % MOD)
            for a in (rng.randrange(-100, 4000) for _ in range(rng.randint(1, 3)))
        )
    if rng.random() < 0.3 and conn.ts_ok and seg.timestamps is not None:
        seg.timestamps = (seg.timestamps[0] + rng.choice(_DELTAS)) % MOD, seg.timestamps[1]
    try:
        wire.options_bytes(seg)
    except ValueError:
        seg.fast_open = None
        seg.sack_blocks = seg.sack_blocks[:2]
    if rng.random() < 0.15:  # through the wire: bytes mutated, and decoded if they still can be
        data = mutate(wire.encode(seg, V4_A, V4_B), rng)
        try:
            decoded = wire.decode(fix_checksum(V4_A, V4_B, data), V4_A, V4_B)
        except wire.TcpDecodeError:
            return seg
        decoded.src_port, decoded.dst_port = seg.src_port, seg.dst_port
        return decoded
    return seg


def run_tcp_connection_case(case: StackCase, count: int, stats: dict) -> None:
    """A client and a server connection joined by a lossy, reordering pipe; each input
    is one segment to one of them: one the peer sent (delivered, duplicated, out of
    order), or such a segment or a made-up one with its fields moved. In a fifth of
    the cases nothing is forged, and each end must get exactly what the other sent."""
    rng = case.rng
    clean = rng.random() < 0.2
    client = _End("client", _params(rng))
    server = _End("server", _params(rng) if rng.random() < 0.5 else client.params)
    ends = {"client": client, "server": server}
    flights: dict[str, list[Segment]] = {"client": [], "server": []}  # to that end
    history: dict[str, list[Segment]] = {"client": [], "server": []}  # sent by that end
    now = 0.0
    cookie = client.params.fast_open and server.params.fast_open and rng.random() < 0.5

    def open_client() -> None:
        conn = client.new(
            TcpConnection(
                client.params, random.Random(rng.randrange(1 << 30)), CLIENT_PORT, 80, 1460
            )
        )
        if rng.random() < 0.5:
            _send(client, randbytes(rng, rng.choice((10, 300, 3000))))
        if cookie:
            conn.set_syn_data_mss(1460)
        conn.connect(now, COOKIE if cookie else None)

    def accept(syn: Segment) -> None:
        conn = server.new(
            TcpConnection(
                server.params, random.Random(rng.randrange(1 << 30)), SERVER_PORT, CLIENT_PORT, 1460
            )
        )
        if server.params.fast_open:
            conn.tfo_grant = COOKIE
            conn.tfo_valid = lambda c: c == COOKIE
        conn.listen_accept(now, syn)

    def collect(end: _End) -> None:
        conn = end.conn
        if conn is None:
            return
        peer = server if end is client else client
        for seg, header_bytes in conn.segments_to_send():
            _check_segment(end, seg, header_bytes)
            flights[peer.name].append(seg)
            history[end.name] = (history[end.name] + [seg])[-8:]
        for event in conn.events():
            assert not end.closed, f"{end.name}: {event} after Closed"
            if isinstance(event, Closed):
                end.closed = True
            elif isinstance(event, DataReceived):
                assert event.data, "an empty DataReceived"
                end.received += event.data
                if clean:
                    assert peer.sent.startswith(end.received), (
                        f"{end.name} received bytes its peer did not send"
                    )
        _check_state(end, now)

    open_client()
    collect(client)
    for _ in range(count):
        # The applications: write, close, abort, reconnect.
        r = rng.random()
        end = rng.choice((client, server))
        if end.live and r < 0.25:
            _send(end, randbytes(rng, rng.choice((1, 20, 536, 1500, 4000))))
        elif end.live and r < 0.3:
            end.conn.close(now)
        elif end.live and r < 0.31:
            end.conn.abort(now)
        elif not client.live and not clean and r < 0.5:
            open_client()  # (not in a clean case: the old segments may still arrive)
        for e in (client, server):
            collect(e)
        # One segment to one end.
        name = rng.choice(("client", "server"))
        to = ends[name]
        other = "server" if name == "client" else "client"
        flight = flights[name]
        seg = None
        r = rng.random()
        if flight and (clean or r < 0.6):
            i = 0 if rng.random() < 0.7 else rng.randrange(len(flight))
            seg = flight[i] if rng.random() < 0.1 else flight.pop(i)  # duplicated, or not
            if rng.random() < 0.1:
                seg = None  # lost
        elif not clean and to.conn is not None:
            model = rng.choice(history[other]) if history[other] else None
            seg = _forge(rng, to, model)
        if seg is not None:
            case.note(f"to-{name}", wire.encode(seg, V4_A, V4_B))
            if to.live:
                to.conn.receive(now, seg)
            elif (
                name == "server"
                and seg.flags & (SYN | ACK | RST) == SYN
                and not (clean and server.conns)
            ):
                accept(seg)  # a listening stack makes a connection for a SYN
        # Time passes; timers fire.
        now += rng.choice((0.0, 0.0, 0.001, 0.05, 0.3, 1.5, 10.0, 70.0))
        for e in (client, server):
            collect(e)
            conn = e.conn
            if conn is not None:
                t = conn.next_timer()
                if t is not None and t <= now:
                    conn.handle_timer(now)
                    t = conn.next_timer()
                    assert t is None or t > now, f"{e.name}: a timer at {t} stays due at {now}"
            collect(e)
        stats["inputs"] += 1


def _send(end: _End, data: bytes) -> None:
    conn = end.conn
    if conn.fin_queued or end.closed:
        return  # send() after close() is the application's error
    conn.send(0.0, data)
    end.sent += data


def _check_segment(end: _End, seg: Segment, header_bytes: int) -> None:
    """What a connection sends must be a segment of its connection that encodes."""
    conn = end.conn
    assert (seg.src_port, seg.dst_port) == (conn.local_port, conn.remote_port) or (
        seg.flags & RST
    ), f"{end.name} sent {seg.summary()} on other ports"
    assert 0 <= header_bytes <= len(seg.payload)
    assert 0 <= seg.window <= 0xFFFF and 0 <= seg.seq < MOD and 0 <= seg.ack < MOD
    data = wire.encode(seg, V4_A, V4_B)  # raises for options beyond 40 bytes
    assert wire.decode(data, V4_A, V4_B) == seg, f"{end.name} sent {seg.summary()}"
    assert len(seg.payload) <= max(conn.smss, 1), f"{end.name} sent more than its MSS"


def _check_state(end: _End, now: float) -> None:
    conn = end.conn
    if conn is None:
        return
    assert conn.state in STATES, f"{end.name}: state {conn.state!r}"
    assert conn.snd_una <= conn.snd_nxt <= conn.snd_max <= conn.data_end + 1, (
        f"{end.name}: una {conn.snd_una} nxt {conn.snd_nxt} max {conn.snd_max} end {conn.data_end}"
    )
    assert conn.rcv_nxt >= end.rcv_nxt, f"{end.name}: rcv_nxt went back"
    end.rcv_nxt = conn.rcv_nxt
    window = conn.params.receive_buffer_bytes
    held = sum(len(chunk) for _, chunk in conn._ooo.values())
    assert held <= window, f"{end.name} holds {held} out-of-order bytes, window {window}"
    if conn.state in tcp._CAN_RECEIVE:  # (after a FIN, data beyond it just waits)
        for start in conn._ooo:
            assert start > conn.rcv_nxt, f"{end.name} keeps out-of-order data it has delivered"
    assert len(conn._buf) == conn.data_end - conn._buf_start
    assert len(conn._sack_report) <= len(conn._ooo) + 1
    t = conn.next_timer()
    assert t is None or math.isfinite(t)
    assert not conn.finished or t is None, f"{end.name}: a closed connection keeps a timer"


STACKS = {"tcp-connection": run_tcp_connection_case}
