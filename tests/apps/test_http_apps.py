"""HTTP/1.1 and HTTP/2 servers and clients over simulated TCP."""

from __future__ import annotations

import h2.settings
import pytest

from iotbench.apps.http.content import answer, host_header
from iotbench.apps.http.http1 import Http1Client, Http1Server
from iotbench.apps.http.http2 import PREFACE, Http2Client, Http2Server, header_bytes
from iotbench.apps.sensors import ObjectResource
from iotbench.metrics.items import ItemLog
from iotbench.metrics.observers import Observers, PacketRecorder
from iotbench.net.link import PointToPointLink
from iotbench.net.node import Node
from iotbench.net.tcp import TcpParams, TcpStack
from iotbench.net.tcp.segment import decode
from iotbench.sim import Simulator

PATH = "/o"


def setup(version: str, per_request=False, minimal=False, headers=()):
    sim = Simulator(1)
    log = []
    a, b = Node(sim, "client"), Node(sim, "server")
    ia, ib = a.add_interface("10.0.0.1", 1500), b.add_interface("10.0.0.2", 1500)
    PointToPointLink(
        sim, ia, ib, rate_bps=1_000_000, delay_s=0.01, observers=Observers(PacketRecorder(log))
    )
    params = TcpParams(nagle=False)
    cs, ss = TcpStack(sim, a, params), TcpStack(sim, b, params)
    resources = {PATH: ObjectResource(300)}

    def connect(on_event, data, header_len):
        return cs.connect(ib.address, 80, on_event, data=data, header_len=header_len)

    host = host_header("10.0.0.2", 80)
    if version == "1.1":
        server = Http1Server(ss, 80, resources, [("Server", "t")])
        client = Http1Client(connect, host, PATH, headers, per_request)
    else:
        server = Http2Server(ss, 80, resources, [("Server", "t")], minimal)
        client = Http2Client(connect, host, PATH, headers, per_request, minimal)
    return sim, log, client, server, cs, ss


def issue(sim, client, times, path_client=None):
    items = ItemLog()
    results = []

    def done(item, ok, payload):
        results.append((item.index, ok, payload, sim.now))

    for t in times:
        sim.at(t, lambda: client.start(items.start(sim.now), done))
    return results


@pytest.mark.parametrize("version", ["1.1", "2"])
@pytest.mark.parametrize("per_request", [False, True])
def test_every_request_is_answered_in_full(version, per_request):
    sim, log, client, server, cs, ss = setup(version, per_request)
    results = issue(sim, client, [0.0, 0.0, 0.001, 0.5, 0.5001])
    sim.run(until=200)
    assert sorted((i, ok, n) for i, ok, n, _ in results) == [(i, True, 300) for i in range(5)]
    assert server.protocol_errors == 0
    assert cs.connections == 0 and ss.connections == 0 or not per_request


def test_http1_pipelining_uses_one_connection_and_keeps_order():
    sim, log, client, server, cs, ss = setup("1.1")
    results = issue(sim, client, [0.0] + [0.1 + 0.0001 * i for i in range(10)])
    sim.run(until=10)
    assert [i for i, *_ in results] == list(range(11))  # answered in request order
    syns = [p for p in log if decode(p.data[20:], p.data[12:16], p.data[16:20]).flags & 0x02]
    assert len(syns) == 2  # one SYN and one SYN-ACK


def test_http1_connection_close_makes_the_server_close():
    sim, log, client, server, cs, ss = setup(
        "1.1", per_request=True, headers=[("Connection", "close")]
    )
    results = issue(sim, client, [0.0])
    sim.run(until=1.0)
    assert results[0][1] is True
    fins = [p for p in log if decode(p.data[20:], p.data[12:16], p.data[16:20]).flags & 0x01]
    assert fins[0].src == "server"  # the server closed first


def test_http2_requests_share_one_connection_as_streams():
    sim, log, client, server, cs, ss = setup("2")
    results = issue(sim, client, [0.0, 0.0, 0.0])
    sim.run(until=5)
    assert len(results) == 3 and all(ok for _, ok, *_ in results)
    assert cs.connections == 1


def test_http2_minimal_settings_on_the_wire():
    sim, log, client, server, cs, ss = setup("2", minimal=True)
    issue(sim, client, [0.0])
    sim.run(until=5)
    payloads = [(p.src, decode(p.data[20:], p.data[12:16], p.data[16:20]).payload) for p in log]
    first_client = next(data for src, data in payloads if src == "client" and data)
    assert first_client.startswith(PREFACE + bytes.fromhex("000000040000000000"))
    first_server = next(data for src, data in payloads if src == "server" and data)
    code = h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS
    assert first_server[:15] == bytes.fromhex("000006040000000000") + bytes([0, code, 0, 0, 0, 100])


def test_http2_header_bytes_count_everything_but_data_payload():
    settings = bytes.fromhex("000006040000000000") + bytes(6)
    headers = bytes.fromhex("000005010400000001") + b"abcde"
    data = bytes.fromhex("00000a000100000001") + b"0123456789"
    padded = bytes.fromhex("000006000900000001") + bytes([2]) + b"xyz" + bytes(2)
    blob = PREFACE + settings + headers + data + padded
    assert header_bytes(blob) == 24 + 15 + 14 + 9 + (9 + 1 + 2)
    assert header_bytes(b"") == 0


@pytest.mark.parametrize("version", ["1.1", "2"])
def test_servers_survive_garbage(version):
    sim, log, client, server, cs, ss = setup(version)
    closed = []
    sock = cs.connect(bytes([10, 0, 0, 2]), 80, closed.append, data=b"\x00\xffNOT HTTP\r\n\r\n" * 3)
    sim.run(until=5)
    assert server.protocol_errors == 1
    assert type(closed[-1]).__name__ == "Closed" and closed[-1].reason == "reset"
    assert sock.state == "CLOSED"


def raw_http1(request: bytes) -> tuple[bytes, int]:
    """`request`'s bytes to the HTTP/1.1 server; (what came back, protocol errors)."""
    sim, _log, _client, server, cs, _ss = setup("1.1")
    got = []

    def on_event(event):
        if type(event).__name__ == "DataReceived":
            got.append(event.data)

    cs.connect(bytes([10, 0, 0, 2]), 80, on_event, data=request)
    sim.run(until=5)
    return b"".join(got), server.protocol_errors


def test_http1_head_gets_the_get_headers_and_no_content():
    response, errors = raw_http1(b"HEAD /o HTTP/1.1\r\nHost: x\r\n\r\n")
    head, _, rest = response.partition(b"\r\n\r\n")
    assert errors == 0 and head.startswith(b"HTTP/1.1 200 OK")
    assert b"Content-Length: 300" in head.split(b"\r\n") and rest == b""
    # The connection stays open for the next request: a GET after it is answered in full.
    response, errors = raw_http1(
        b"HEAD /o HTTP/1.1\r\nHost: x\r\n\r\nGET /o HTTP/1.1\r\nHost: x\r\n\r\n"
    )
    assert errors == 0 and response.count(b"HTTP/1.1 200 OK") == 2
    assert response.endswith(ObjectResource(300).read())


def test_other_methods_get_405_with_allow():
    response, errors = raw_http1(b"POST /o HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
    head = response.split(b"\r\n")
    assert errors == 0 and head[0] == b"HTTP/1.1 405 Method Not Allowed"
    assert b"Allow: GET, HEAD" in head and b"Content-Length: 0" in head
    status, headers, body = answer({PATH: ObjectResource(3)}, PATH, [], "DELETE")
    assert (status, body) == (405, b"") and ("Allow", "GET, HEAD") in headers
    status, headers, body = answer({PATH: ObjectResource(3)}, PATH, [], "HEAD")
    assert (status, body) == (200, b"") and ("Content-Length", "3") in headers


def test_unknown_path_is_404():
    status, headers, body = answer({PATH: ObjectResource(3)}, "/nothing", [])
    assert status == 404 and ("Content-Length", str(len(body))) in headers
    status, headers, body = answer({PATH: ObjectResource(3)}, "/o?x=1", [("Server", "s")])
    assert status == 200 and body == b"012" and headers[0] == ("Server", "s")
    assert headers[-2:] == [("Content-Type", "application/octet-stream"), ("Content-Length", "3")]


def test_host_header_forms():
    assert host_header("10.0.0.2", 80) == "10.0.0.2"
    assert host_header("fd00::2", 8080) == "[fd00::2]:8080"
