"""The simulated TCP's segments for one MQTT item against Linux's own TCP.

One S3 item (connect, CONNECT, CONNACK, PUBLISH, PUBACK for QoS 1,
DISCONNECT, close) is run twice: in the simulator (`s3-robustness` on a
10 microsecond link), and by our MQTT client over the OS's TCP on loopback to
Eclipse mosquitto, captured with tshark. The client's close follows its last
write at once in both. The real client runs over a blocking socket, as a
real-time process on the CPU that mosquitto is pinned to, so that mosquitto
reads the DISCONNECT only after the client's close() (as in the simulator,
and on any network where the two segments arrive closer together than a
process wakes up); otherwise the two race on loopback. Both ends use Nagle (mosquitto's
default, and the simulated publisher's), SACK and timestamps.

The segments of both must be the same, in the same order, with the same
flags, from the SYN to the client's FIN: quick ACKs of the first data, ACKs
riding on replies once a connection is interactive, the FIN riding on a
DISCONNECT that Nagle held (QoS 0) or following it alone (QoS 1), and a
FIN that carries the broker's ACK. After the client's FIN one difference is
known and asserted: the simulated broker closes in zero time when it reads
DISCONNECT, before the client's FIN (sent a few microseconds after the
DISCONNECT) arrives, so in QoS 1 the two FINs cross and the broker adds a
pure ACK; the real broker takes tens of microseconds to wake up, and the
client's FIN is there first (docs/tcp.md).
"""

from __future__ import annotations

import multiprocessing
import os
import random
import socket
import subprocess
import time
from pathlib import Path

import pytest

from iotbench.proto.mqtt import events as ev
from iotbench.proto.mqtt.client import MqttClient
from iotbench.proto.mqtt.params import MqttClientParams
from iotbench.scenarios import expand, load_scenario
from iotbench.world import run_one

pytestmark = pytest.mark.interop

Segment = tuple[str, str, bool]  # (sender "C" or "B", flags, carries payload)


def tcp_segments(tshark: str, pcap: Path, broker_port: int) -> list[Segment]:
    """The first TCP connection of a capture, as (sender, flags, has payload)."""
    done = subprocess.run(
        [tshark, "-r", str(pcap), "-Y", "tcp.stream == 0", "-T", "fields",
         "-e", "tcp.srcport", "-e", "tcp.flags.str", "-e", "tcp.len"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    rows = []
    for line in done.stdout.splitlines():
        port, flags, length = line.split("\t")
        sender = "B" if int(port) == broker_port else "C"
        rows.append((sender, flags.replace("·", "").strip(), int(length) > 0))
    return rows


def simulated(tmp_path: Path, tshark: str, variant: str) -> list[Segment]:
    (run,) = expand(
        load_scenario("s3-robustness"),
        {"variant": [variant], "condition": ["base"]},
        # Two items, so that the first item's connection is seen to its end.
        {"workload.items": 2, "network.link.delay_s": 1e-5},
    )
    pcap = tmp_path / "sim.pcap"
    run_one(run.config, run.seed, pcap_path=str(pcap))
    return tcp_segments(tshark, pcap, 1883)


def publish_one_item(port: int, qos: int) -> None:
    """Our sans-I/O MQTT client over a blocking socket: one S3 item."""
    client = MqttClient(random.Random(1), MqttClientParams(client_id="item-0"))
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    client.connect(0.0)
    while True:
        for event in client.events():
            if isinstance(event, ev.Connected):
                client.publish(0.0, "sensor/voltage", b"0 21.5", qos)
            elif isinstance(event, ev.Published):
                client.disconnect(0.0)
        if out := client.data_to_send():
            sock.sendall(out)
            continue  # events the writes caused (QoS 0: Published)
        if client.close_requested:
            sock.close()  # right after the last write, as the simulated publisher
            return
        data = sock.recv(4096)
        assert data, "mosquitto closed first"
        # Let the broker finish the write that woke us (it holds its socket's lock
        # until its send returns). A real-time client that preempts it mid-send
        # makes our next segment wait in the broker's backlog, and Linux then
        # acknowledges or orders it otherwise: a race of the test's own making,
        # not a rule of TCP. 2 ms is far below the delayed ACK's 40 ms, so it
        # changes no decision the comparison is about.
        time.sleep(0.002)
        client.receive_data(0.0, data)


def _publish_as_realtime_process(port: int, qos: int, cpu: int) -> None:
    os.sched_setaffinity(0, {cpu})
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    publish_one_item(port, qos)
    # Back to an ordinary process before exiting: tearing down a fork of a large
    # test process takes a while, and as a real-time process on the broker's CPU
    # it would keep the broker from acknowledging our FIN until our RTO resent it.
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))


def mosquitto_pid(config: Path) -> int:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if str(config).encode() in cmdline:
                return int(entry.name)
    raise AssertionError("mosquitto's process not found")


def captured(tmp_path: Path, tshark: str, port: int, qos: int, attempt: int) -> list[Segment]:
    pcap = tmp_path / f"real-{attempt}.pcap"
    capture = subprocess.Popen(
        [tshark, "-i", "lo", "-f", f"tcp port {port}", "-w", str(pcap)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while not (pcap.exists() and pcap.stat().st_size > 0):  # the pcap header: capturing
            assert capture.poll() is None, capture.stderr.read()
            assert time.monotonic() < deadline, "tshark did not start capturing"
            time.sleep(0.05)
        time.sleep(0.5)
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(mosquitto_pid(tmp_path / "mosquitto.conf"), {cpu})
        client = multiprocessing.get_context("fork").Process(
            target=_publish_as_realtime_process, args=(port, qos, cpu)
        )
        client.start()
        client.join(30)
        assert client.exitcode == 0, "the real client failed"
        time.sleep(1.0)  # the broker's FIN and the last ACK
    finally:
        capture.terminate()
        capture.communicate(timeout=20)
    return tcp_segments(tshark, pcap, port)


def until_client_fin(segments: list[Segment]) -> list[Segment]:
    end = next(i for i, (who, flags, _) in enumerate(segments) if who == "C" and "F" in flags)
    return segments[: end + 1]


@pytest.mark.parametrize("qos", [0, 1])
def test_one_mqtt_item_has_linuxs_segments(tmp_path, require_peer, mosquitto_broker, qos):
    tshark = require_peer("tshark")
    data = [("C", "AP", True)]  # CONNECT
    expected = [
        ("C", "S", False), ("B", "AS", False), ("C", "A", False),
        *data, ("B", "A", False),                     # quick ACK of CONNECT
        ("B", "AP", True), ("C", "A", False),         # CONNACK, quick ACK of it
    ]  # fmt: skip
    if qos == 0:
        # PUBLISH; Nagle holds DISCONNECT until close() puts the FIN on it; the
        # broker reads two small pushed segments (an ACK), then closes.
        expected += [("C", "AP", True), ("C", "APF", True), ("B", "A", False), ("B", "AF", False)]
    else:
        # PUBLISH, PUBACK with the ACK (interactive now), DISCONNECT with the
        # ACK of PUBACK, the FIN alone (DISCONNECT had left at once).
        expected += [("C", "AP", True), ("B", "AP", True), ("C", "AP", True), ("C", "AF", False)]
    # After the client's FIN: Linux's client acknowledges the broker's FIN; the
    # simulated broker's FIN crosses the client's in QoS 1 (see the docstring).
    crossing = [("B", "AF", False), ("B", "A", False), ("C", "A", False)]
    real_end = [("C", "A", False)] if qos == 0 else crossing[::2]
    sim_end = [("C", "A", False)] if qos == 0 else crossing
    # A loaded host can still wake the broker, or tshark, at the wrong moment
    # (CI once saw it); Linux's rules are what is compared, so a capture that
    # a scheduling accident disturbed is taken again, up to five times.
    for attempt in range(5):
        real = captured(tmp_path, tshark, mosquitto_broker, qos, attempt)
        if real == expected + real_end:
            break
    assert real == expected + real_end
    sim = simulated(tmp_path, tshark, f"mqtt-qos{qos}")
    assert until_client_fin(sim) == until_client_fin(real)
    assert sim == expected + sim_end
