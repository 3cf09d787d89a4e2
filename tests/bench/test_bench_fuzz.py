"""bench/fuzz.py runs every target, reports a failure with what reproduces it, and
reproduces it from the seed and case (no timings asserted)."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "bench" / "fuzz.py"


def load():
    spec = importlib.util.spec_from_file_location("fuzz", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_every_target_runs_clean(capsys):
    fuzz = load()
    assert fuzz.main(["--inputs", "120", "--seed", "3"]) == 0
    header, *rows, footer = capsys.readouterr().out.splitlines()
    assert header.split()[:3] == ["target", "inputs", "failures"]
    assert [row.split()[0] for row in rows] == fuzz.TARGETS
    for row in rows:
        target, inputs, failures = row.split()[:3]
        assert (inputs, failures) == ("120", "0"), row
    assert footer.startswith("seed 3; peak memory")


def test_a_failure_names_target_seed_case_and_input_and_reproduces(capsys, monkeypatch):
    fuzz = load()
    seen = []

    def check(data: bytes) -> bool:
        seen.append(data)
        if len(seen) == 5:
            raise ValueError("boom")  # an untyped error out of a decoder
        return False

    codec = dataclasses.replace(fuzz._CODEC_BY_NAME["udp"], check=check)
    monkeypatch.setitem(fuzz._CODEC_BY_NAME, "udp", codec)
    assert fuzz.main(["--codec", "udp", "--inputs", "50", "--seed", "9"]) == 1
    out = capsys.readouterr().out
    assert "FAILURE udp seed=9 case=0: unexpected ValueError: boom" in out
    assert f"input {seen[4].hex()}" in out
    assert "python bench/fuzz.py --codec udp --seed 9 --case 0" in out

    # The case alone gives the same inputs, so the same failure.
    first = list(seen)
    seen.clear()
    assert fuzz.main(["--codec", "udp", "--seed", "9", "--case", "0"]) == 1
    assert seen == first


def test_a_stack_failure_lists_the_inputs_of_its_case(capsys, monkeypatch):
    fuzz = load()

    def broken(case, count, stats):
        for i in range(count):
            case.note("datagram", bytes((i,)))
            if i == 2:
                raise AssertionError("internal error in the endpoint")
            stats["inputs"] += 1

    monkeypatch.setitem(fuzz.STACKS, "coap-endpoint", broken)
    assert fuzz.main(["--codec", "coap-endpoint", "--inputs", "10", "--json"]) == 1
    err = capsys.readouterr().err
    assert "FAILURE coap-endpoint seed=0 case=0: property does not hold" in err
    assert "input datagram:00" in err and "input datagram:02" in err


# ---- the stack targets of issue 39 item 8: each runs, and each detects a planted failure

NEW_TARGETS = [
    "tcp-segment",
    "tcp-connection",
    "http1-server",
    "http2-server",
    "http-real",
    "http1-client",
    "http2-client",
    "quic-server",
    "em-profile",
    "em-manager",
    "rpl-node",
    "ndn-framing",
    "real-datagram-driver",
    "real-stream-server",
    "real-stream-client",
]


def test_the_new_targets_are_listed_and_run_clean(capsys):
    fuzz = load()
    assert set(NEW_TARGETS) <= set(fuzz.TARGETS)
    assert fuzz.main(["--codec", *NEW_TARGETS, "--inputs", "200", "--seed", "5"]) == 0
    rows = capsys.readouterr().out.splitlines()[1:-1]
    assert [row.split()[:3] for row in rows] == [[t, "200", "0"] for t in NEW_TARGETS]


def _fails(fuzz, capsys, target: str, inputs: int, text: str) -> str:
    """Run `target` until a failure; the report names it and says `text`."""
    assert fuzz.main(["--codec", target, "--inputs", str(inputs), "--seed", "1"]) == 1
    out = capsys.readouterr().out
    assert f"FAILURE {target} seed=1 case=" in out, out[-2000:]
    assert text in out, out[-3000:]
    assert f"python bench/fuzz.py --codec {target} --seed 1 --case" in out
    return out


def _raise_after(n: int, original):
    """`original`, raising RuntimeError from its n-th call on."""
    calls = []

    def planted(*args, **kwargs):
        calls.append(1)
        if len(calls) >= n:
            raise RuntimeError("planted")
        return original(*args, **kwargs)

    return planted


def test_tcp_segment_detects_a_decoder_raising_untyped(capsys, monkeypatch):
    from iotbench.net.tcp import segment

    fuzz = load()
    monkeypatch.setattr(segment, "decode", _raise_after(50, segment.decode))
    _fails(fuzz, capsys, "tcp-segment", 1000, "unexpected RuntimeError: planted")


def test_tcp_connection_detects_a_receive_that_raises(capsys, monkeypatch):
    from iotbench.net.tcp.connection import TcpConnection

    fuzz = load()
    monkeypatch.setattr(TcpConnection, "receive", _raise_after(20, TcpConnection.receive))
    out = _fails(fuzz, capsys, "tcp-connection", 640, "unexpected RuntimeError: planted")
    assert "input to-" in out  # the segments of the case, in hex


def test_tcp_connection_detects_overlapping_data_held_twice(capsys, monkeypatch):
    """The out-of-order store as it was before the fuzz found it: segments kept whole."""
    from iotbench.net.tcp.connection import TcpConnection

    def hold_whole(self, start, payload):
        held = self._ooo.get(start)
        if held is None or len(held[1]) < len(payload):
            self._ooo[start] = (start, payload)

    fuzz = load()
    monkeypatch.setattr(TcpConnection, "_hold", hold_whole)
    _fails(fuzz, capsys, "tcp-connection", 400_000, "out-of-order bytes, window")


def test_http1_server_detects_a_broken_response(capsys, monkeypatch):
    from iotbench.apps.http import http1

    fuzz = load()
    monkeypatch.setattr(http1, "REASONS", {200: b"OK\r\nX"})  # a reason with a line break
    _fails(fuzz, capsys, "http1-server", 640, "property does not hold")


def test_http2_server_detects_requests_left_unanswered(capsys, monkeypatch):
    from iotbench.apps.http import http2

    fuzz = load()
    monkeypatch.setattr(http2, "_send_body", lambda conn, stream_id, bodies: None)
    _fails(fuzz, capsys, "http2-server", 6400, "not answered")


def test_http_real_detects_bytes_beyond_the_responses(capsys, monkeypatch):
    from iotbench.real.http import HttpServer

    respond = HttpServer._respond

    async def extra(conn, writer, status, headers, body):
        await respond(conn, writer, status, headers, body)
        writer.write(b"!")

    fuzz = load()
    monkeypatch.setattr(HttpServer, "_respond", staticmethod(extra))
    _fails(fuzz, capsys, "http-real", 640, "property does not hold")


def test_quic_server_detects_a_receive_that_raises(capsys, monkeypatch):
    from iotbench.proto.quic.endpoint import QuicServer

    fuzz = load()
    monkeypatch.setattr(QuicServer, "receive", _raise_after(40, QuicServer.receive))
    _fails(fuzz, capsys, "quic-server", 640, "unexpected RuntimeError: planted")


def test_quic_server_detects_connections_of_unsupported_versions(capsys, monkeypatch):
    """The server as it was before the fuzz found it: any Initial makes a connection."""
    from aioquic.quic.connection import QuicConnection
    from aioquic.quic.packet import QuicPacketType

    from iotbench.proto.quic.endpoint import SMALLEST_INITIAL, QuicServer

    def accept(self, header, data):
        if header.packet_type != QuicPacketType.INITIAL or len(data) < SMALLEST_INITIAL:
            return None
        conn = QuicConnection(
            configuration=self.configuration,
            original_destination_connection_id=header.destination_cid,
            session_ticket_fetcher=self._tickets.get,
            session_ticket_handler=self._store_ticket,
        )
        self._add(conn, header.destination_cid)
        return conn

    fuzz = load()
    monkeypatch.setattr(QuicServer, "_accept", accept)
    _fails(fuzz, capsys, "quic-server", 12_800, "IndexError")


def test_em_profile_detects_an_error_other_than_profile_error(capsys, monkeypatch):
    import fuzz_targets.em

    fuzz = load()
    parse = fuzz_targets.em.parse_profile
    monkeypatch.setattr(fuzz_targets.em, "parse_profile", _raise_after(30, parse))
    _fails(fuzz, capsys, "em-profile", 640, "unexpected RuntimeError: planted")


def test_em_manager_detects_a_receive_that_raises(capsys, monkeypatch):
    from iotbench.apps.em.manager import EntityManager

    fuzz = load()
    monkeypatch.setattr(EntityManager, "receive", _raise_after(30, EntityManager.receive))
    _fails(fuzz, capsys, "em-manager", 640, "unexpected RuntimeError: planted")


def test_rpl_node_detects_a_timer_due_forever(capsys, monkeypatch):
    """The refresh as it was before the fuzz found it: due at once for a 0 s lifetime.
    (RplNode is compiled, so the bug is planted around it: after each timer.)"""
    fuzz = load()
    import fuzz_targets.rpl

    real = fuzz_targets.rpl.RplNode

    class RefreshDueAtOnce:
        def __init__(self, *args, **kwargs):
            self._node = real(*args, **kwargs)

        def __getattr__(self, name):
            return getattr(self._node, name)

        def handle_timer(self, now):
            node = self._node
            node.handle_timer(now)
            config = node.config
            if node.joined and config is not None and config.default_lifetime == 0:
                node._refresh_at = now

    monkeypatch.setattr(fuzz_targets.rpl, "RplNode", RefreshDueAtOnce)
    _fails(fuzz, capsys, "rpl-node", 32_000, "stays due")


def test_ndn_framing_detects_pieces_that_change_the_elements(capsys, monkeypatch):
    from iotbench.proto.ndn.framing import TlvFramer

    feed = TlvFramer.feed

    def forgetful(self, data):
        if len(data) == 1:
            self._buffer.clear()  # a one-byte piece loses what was held
        return feed(self, data)

    fuzz = load()
    monkeypatch.setattr(TlvFramer, "feed", forgetful)
    _fails(fuzz, capsys, "ndn-framing", 640, "property does not hold")


def test_real_datagram_driver_detects_a_handler_error_escaping(capsys, monkeypatch):
    from iotbench.real.driver import AsyncDatagramDriver

    fuzz = load()
    monkeypatch.setattr(AsyncDatagramDriver, "_deliver", lambda self, event: self.on_event(event))
    _fails(fuzz, capsys, "real-datagram-driver", 640, "unexpected Boom")


def test_real_stream_server_detects_a_lost_connection_still_counted(capsys, monkeypatch):
    from iotbench.real.stream import StreamServerDriver

    fuzz = load()
    monkeypatch.setattr(StreamServerDriver, "_connection_lost", lambda self, conn: None)
    _fails(fuzz, capsys, "real-stream-server", 640, "connections,")


def test_real_stream_client_detects_a_handler_error_escaping(capsys, monkeypatch):
    from iotbench.real import stream

    fuzz = load()
    monkeypatch.setattr(stream, "_deliver", lambda on_event, event: on_event(event))
    _fails(fuzz, capsys, "real-stream-client", 640, "unexpected Boom")


def test_a_case_that_does_not_end_fails(capsys, monkeypatch):
    fuzz = load()

    def endless(case, count, stats):
        case.note("datagram", b"\x01")
        while True:
            pass

    monkeypatch.setattr(fuzz, "CASE_SECONDS", 0.2)
    monkeypatch.setitem(fuzz.STACKS, "rpl-node", endless)
    assert fuzz.main(["--codec", "rpl-node", "--inputs", "10"]) == 1
    out = capsys.readouterr().out
    assert "FAILURE rpl-node seed=0 case=0: unexpected CaseTimeout" in out
    assert "input datagram:01" in out


def test_a_quic_case_replays(monkeypatch):
    """aioquic's own randomness comes from the case's generator: a case gives the same
    inputs (among them the client's datagrams) every time."""
    fuzz = load()
    seen: list[bytes] = []
    note = fuzz.StackCase.note

    def noting(self, label, data):
        seen.append(data)
        return note(self, label, data)

    monkeypatch.setattr(fuzz.StackCase, "note", noting)
    fuzz.run_case("quic-server", 4, 2, 32, {"inputs": 0})
    first = list(seen)
    seen.clear()
    fuzz.run_case("quic-server", 4, 2, 32, {"inputs": 0})
    assert seen == first and len(first) == 32


def test_http1_client_detects_an_item_left_on_an_ended_connection(capsys, monkeypatch):
    from iotbench.apps.http import http1

    fuzz = load()
    monkeypatch.setattr(http1._ClientConnection, "_fail_all", lambda self: None)
    _fails(fuzz, capsys, "http1-client", 640, "waits on an ended connection")


def test_http2_client_detects_a_request_beyond_the_server_stream_limit(capsys, monkeypatch):
    """The client as it was before the fuzz found it: a request beyond the server's
    SETTINGS_MAX_CONCURRENT_STREAMS raised TooManyStreamsError out of start()."""
    from iotbench.apps.http import http2

    def open_anyway(self, exchange):
        stream_id = self.conn.get_next_available_stream_id()
        self.conn.send_headers(stream_id, self.client.headers, end_stream=True)
        self.streams[stream_id] = exchange

    fuzz = load()
    monkeypatch.setattr(http2._ClientConnection, "open", open_anyway)
    _fails(fuzz, capsys, "http2-client", 64_000, "TooManyStreamsError")
