"""Network namespaces for emulated nodes: packets through the TUN both ways (IPv6 and
IPv4), refusals, and teardown, including after a run is killed.

These make real namespaces and TUN devices, so they need root; each test uses
names of its own and a temporary state directory, and removes what it made.
Programs "inside" a node run with `ip netns exec`, like a user's would.
"""

from __future__ import annotations

import ipaddress
import json
import os
import secrets
import select
import shutil
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import iotbench.emulate.netns as netns
from iotbench.emulate.netns import (
    AttachedNamespace,
    HostAddress,
    NamespaceError,
    create_namespace,
    remove_stale,
)

pytestmark = [pytest.mark.usefixtures("require_root"), pytest.mark.timeout(60)]

IP = shutil.which("ip") or "/usr/sbin/ip"
TIMEOUT_S = 10.0
# The source tree (or site-packages) holding iotbench, for child processes.
PACKAGE_ROOT = str(Path(netns.__file__).resolve().parents[2])

Attach = Callable[..., AttachedNamespace]


def node_name() -> str:
    return "ibt-" + secrets.token_hex(4)


def namespaces() -> set[str]:
    listing = subprocess.run(
        [IP, "netns", "list"], check=True, capture_output=True, text=True, timeout=TIMEOUT_S
    ).stdout
    return {line.split()[0] for line in listing.splitlines() if line.strip()}


def delete_namespace(name: str) -> None:
    subprocess.run([IP, "netns", "del", name], capture_output=True, timeout=TIMEOUT_S)


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def made() -> Iterator[list[str]]:
    """Names of namespaces a test makes other than through `attach`: deleted at the end."""
    names: list[str] = []
    yield names
    for name in names:
        delete_namespace(name)


@pytest.fixture
def attach(state_dir: Path) -> Iterator[Attach]:
    """create_namespace with the test's state directory; everything is closed at the end."""
    opened: list[AttachedNamespace] = []

    def attach(name: str, addresses: list[HostAddress], **kwargs: Any) -> AttachedNamespace:
        kwargs.setdefault("mtu", 1280)
        kwargs.setdefault("routes", [])
        ns = create_namespace(name, addresses, state_dir=state_dir, **kwargs)
        opened.append(ns)
        return ns

    yield attach
    for ns in opened:
        ns.close()


def wait_for_packets(ns: AttachedNamespace, count: int) -> list[bytes]:
    packets: list[bytes] = []
    deadline = time.monotonic() + TIMEOUT_S
    while len(packets) < count and (left := deadline - time.monotonic()) > 0:
        select.select([ns.fd], [], [], left)
        packets += ns.read_packets()
    return packets


class Receiver:
    """A UDP socket bound in a namespace that prints the first datagram it gets."""

    CODE = """
import socket, sys
family = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
s = socket.socket(family, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
s.settimeout(float(sys.argv[3]))
print("ready", flush=True)
data, source = s.recvfrom(65535)
print(data.hex(), source[0], source[1], flush=True)
"""

    def __init__(self, name: str, address: str, port: int) -> None:
        self.process = subprocess.Popen(
            [IP, "netns", "exec", name, sys.executable, "-c", self.CODE]
            + [address, str(port), str(TIMEOUT_S)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        wait_for_line(self.process, "ready")

    def result(self) -> tuple[bytes, str, int]:
        out, err = self.process.communicate(timeout=TIMEOUT_S + 5)
        assert self.process.returncode == 0, err
        data, source, port = out.split()
        return bytes.fromhex(data), source, int(port)


def wait_for_line(process: subprocess.Popen[str], expected: str) -> None:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], TIMEOUT_S)
    line = process.stdout.readline().strip() if ready else "(nothing)"
    if line != expected:
        process.kill()
        _, err = process.communicate(timeout=TIMEOUT_S)
        pytest.fail(f"expected {expected!r} from the child, got {line!r}; stderr: {err}")


def checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071) of data."""
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def udp(pseudo_header: bytes, sport: int, dport: int, payload: bytes) -> bytes:
    length = 8 + len(payload)
    header = struct.pack("!HHHH", sport, dport, length, 0)
    value = checksum(pseudo_header + header + payload) or 0xFFFF  # 0 means "none" in UDP
    return struct.pack("!HHHH", sport, dport, length, value) + payload


def udp6_packet(src: str, dst: str, sport: int, dport: int, payload: bytes) -> bytes:
    source, destination = (ipaddress.IPv6Address(a).packed for a in (src, dst))
    length = 8 + len(payload)
    pseudo = source + destination + struct.pack("!I3xB", length, 17)
    header = struct.pack("!IHBB", 6 << 28, length, 17, 64) + source + destination
    return header + udp(pseudo, sport, dport, payload)


def udp4_packet(src: str, dst: str, sport: int, dport: int, payload: bytes) -> bytes:
    source, destination = (ipaddress.IPv4Address(a).packed for a in (src, dst))
    length = 8 + len(payload)
    pseudo = source + destination + struct.pack("!xBH", 17, length)
    header = struct.pack("!BBHHHBBH", 0x45, 0, 20 + length, 1, 0, 64, 17, 0)
    header = header[:10] + struct.pack("!H", checksum(header + source + destination))
    return header + source + destination + udp(pseudo, sport, dport, payload)


def parse_udp6(packet: bytes) -> tuple[str, str, int, int, bytes]:
    """(src, dst, next header, destination port, UDP payload) of an IPv6 packet."""
    assert packet[0] >> 4 == 6
    (length,) = struct.unpack("!H", packet[4:6])
    assert len(packet) == 40 + length
    src = str(ipaddress.IPv6Address(packet[8:24]))
    dst = str(ipaddress.IPv6Address(packet[24:40]))
    (dport,) = struct.unpack("!H", packet[42:44])
    return src, dst, packet[6], dport, packet[48:]


def parse_udp4(packet: bytes) -> tuple[str, str, int, int, bytes]:
    """(src, dst, protocol, destination port, UDP payload) of an IPv4 packet."""
    assert packet[0] == 0x45  # version 4, no options
    assert checksum(packet[:20]) == 0
    src = str(ipaddress.IPv4Address(packet[12:16]))
    dst = str(ipaddress.IPv4Address(packet[16:20]))
    (dport,) = struct.unpack("!H", packet[22:24])
    return src, dst, packet[9], dport, packet[28:]


SEND = """
import socket, sys
family = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
s = socket.socket(family, socket.SOCK_DGRAM)
for destination in sys.argv[1:]:
    s.sendto(b"hello " + destination.encode(), (destination, 5683))
"""


def send_from(name: str, *destinations: str) -> None:
    subprocess.run(
        [IP, "netns", "exec", name, sys.executable, "-c", SEND, *destinations],
        check=True,
        capture_output=True,
        timeout=TIMEOUT_S,
    )


# Packets both ways


def test_a_datagram_sent_inside_comes_out_of_the_tun_ipv6(attach: Attach) -> None:
    name = node_name()
    ns = attach(name, [HostAddress("fd00::5", 64)], routes=["fd00::/64", "::/0"])
    assert (ns.name, ns.device) == (name, "iot0")
    send_from(name, "fd00::9", "2001:db8::7")  # its own prefix; the default route
    packets = wait_for_packets(ns, 2)
    # Nothing else: no link-local address, router solicitation or MLD report.
    assert [parse_udp6(packet) for packet in packets] == [
        ("fd00::5", "fd00::9", 17, 5683, b"hello fd00::9"),
        ("fd00::5", "2001:db8::7", 17, 5683, b"hello 2001:db8::7"),
    ]


def test_the_namespace_holds_exactly_the_given_addresses_and_mtu(attach: Attach) -> None:
    name = node_name()
    attach(name, [HostAddress("fd00::5", 64), HostAddress("10.1.0.2", 24)], mtu=1400)
    links = subprocess.run(
        [IP, "-n", name, "-j", "address", "show"],
        check=True,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    ).stdout
    by_name = {link["ifname"]: link for link in json.loads(links)}
    assert set(by_name) == {"lo", "iot0"}
    iot0 = by_name["iot0"]
    assert iot0["mtu"] == 1400
    assert "UP" in iot0["flags"] and "UP" in by_name["lo"]["flags"]
    assert sorted((a["local"], a["prefixlen"]) for a in iot0["addr_info"]) == [
        ("10.1.0.2", 24),
        ("fd00::5", 64),
    ]


def test_a_packet_written_to_the_tun_arrives_inside_ipv6(attach: Attach) -> None:
    name = node_name()
    ns = attach(name, [HostAddress("fd00::5", 64)], routes=["fd00::/64"])
    receiver = Receiver(name, "fd00::5", 5683)
    ns.write_packet(udp6_packet("fd00::9", "fd00::5", 40000, 5683, b"from the network"))
    assert receiver.result() == (b"from the network", "fd00::9", 40000)
    assert ns.dropped_writes == 0


def test_ipv4_both_ways(attach: Attach) -> None:
    name = node_name()
    ns = attach(name, [HostAddress("10.1.0.2", 24)], routes=["10.1.0.0/24", "0.0.0.0/0"])
    send_from(name, "10.1.0.9", "192.0.2.7")
    assert [parse_udp4(packet) for packet in wait_for_packets(ns, 2)] == [
        ("10.1.0.2", "10.1.0.9", 17, 5683, b"hello 10.1.0.9"),
        ("10.1.0.2", "192.0.2.7", 17, 5683, b"hello 192.0.2.7"),
    ]
    receiver = Receiver(name, "10.1.0.2", 5683)
    ns.write_packet(udp4_packet("192.0.2.7", "10.1.0.2", 40001, 5683, b"v4 in"))
    assert receiver.result() == (b"v4 in", "192.0.2.7", 40001)


def test_a_packet_the_kernel_refuses_is_dropped_and_counted(attach: Attach) -> None:
    ns = attach(node_name(), [HostAddress("fd00::5", 64)])
    ns.write_packet(bytes(40))  # IP version 0: EINVAL
    ns.write_packet(b"")
    assert ns.dropped_writes == 2
    assert ns.read_packets() == []


# Refusals


@pytest.mark.parametrize("bad", ["", ".", "..", "a/b", "node 1", "x" * 65, "nöde"])
def test_a_name_that_cannot_name_a_namespace_is_refused(attach: Attach, bad: str) -> None:
    with pytest.raises(NamespaceError, match="cannot name a network namespace: use 1 to 64"):
        attach(bad, [HostAddress("fd00::5", 64)])


def test_a_name_of_64_allowed_characters_is_accepted(attach: Attach) -> None:
    name = "ibt-" + secrets.token_hex(4) + "_." + "x" * 50
    assert len(name) == 64
    assert attach(name, []).name in namespaces()


def test_a_namespace_that_is_not_ours_is_refused_and_left_alone(
    attach: Attach, made: list[str], state_dir: Path
) -> None:
    name = node_name()
    made.append(name)
    subprocess.run([IP, "netns", "add", name], check=True, timeout=TIMEOUT_S)
    with pytest.raises(NamespaceError, match=f"namespace {name} exists already: remove it with"):
        attach(name, [HostAddress("fd00::5", 64)])
    assert name in namespaces()
    assert list(state_dir.iterdir()) == []


def test_a_node_attached_already_is_refused(attach: Attach) -> None:
    name = node_name()
    ns = attach(name, [HostAddress("fd00::5", 64)])
    with pytest.raises(NamespaceError, match="attached already, by this process"):
        attach(name, [HostAddress("fd00::6", 64)])
    assert not ns.closed and name in namespaces()


@pytest.mark.parametrize(
    ("addresses", "kwargs", "message"),
    [
        ([HostAddress("fd00::zz", 64)], {}, "is not an IP address with a prefix length"),
        ([HostAddress("10.0.0.2", 33)], {}, "is not an IP address with a prefix length"),
        ([], {"routes": ["fd00::5/64"]}, "is not a prefix like"),
        ([], {"mtu": 40}, "out of range"),
        ([HostAddress("fd00::5", 64)], {"mtu": 1000}, "IPv6 address needs an MTU of at least"),
    ],
)
def test_bad_settings_are_refused_before_anything_is_made(
    attach: Attach,
    state_dir: Path,
    addresses: list[HostAddress],
    kwargs: dict[str, object],
    message: str,
) -> None:
    name = node_name()
    with pytest.raises(NamespaceError, match=message):
        attach(name, addresses, **kwargs)
    assert name not in namespaces()
    assert not state_dir.exists() or list(state_dir.iterdir()) == []


def test_a_failure_half_way_removes_what_was_made(attach: Attach, state_dir: Path) -> None:
    name = node_name()
    # Valid to us, refused by the kernel once the namespace and device exist.
    with pytest.raises(NamespaceError, match=f"node {name}: `ip -n {name} address add ff02::1"):
        attach(name, [HostAddress("ff02::1", 64)])
    assert name not in namespaces()
    assert list(state_dir.iterdir()) == []
    links = subprocess.run(
        [IP, "-o", "link", "show"], check=True, capture_output=True, text=True, timeout=TIMEOUT_S
    )
    assert "iotb" not in links.stdout  # no temporary TUN left in our namespace


# Teardown


def test_close_removes_the_namespace_and_may_be_called_again(
    attach: Attach, state_dir: Path
) -> None:
    name = node_name()
    ns = attach(name, [HostAddress("fd00::5", 64)])
    assert name in namespaces() and (state_dir / name).exists()
    ns.close()
    assert name not in namespaces() and not (state_dir / name).exists()
    ns.close()
    assert ns.closed
    with pytest.raises(ValueError, match="closed"):
        ns.read_packets()


def test_deleting_the_namespace_under_us_is_reported(attach: Attach) -> None:
    name = node_name()
    ns = attach(name, [HostAddress("fd00::5", 64)])
    delete_namespace(name)
    # The kernel tears the namespace down in the background; its TUN goes with it.
    deadline = time.monotonic() + TIMEOUT_S
    with pytest.raises(NamespaceError, match=f"TUN device of node {name} is gone"):
        while time.monotonic() < deadline:
            ns.read_packets()
            time.sleep(0.02)
    ns.close()  # the namespace is gone already: nothing to do, no error


CHILD = """
import signal, sys, time
# Ctrl-C's KeyboardInterrupt even if this test runs as a background job (which
# starts its children with SIGINT ignored).
signal.signal(signal.SIGINT, signal.default_int_handler)
from pathlib import Path
from typing import Any
from iotbench.emulate.netns import HostAddress, create_namespace
ns = create_namespace(
    sys.argv[1], [HostAddress("fd00::5", 64)], mtu=1280, routes=[], state_dir=Path(sys.argv[2])
)
try:
    print("ready", flush=True)
    time.sleep(60)
finally:
    ns.close()
"""


def start_child(name: str, state_dir: Path) -> subprocess.Popen[str]:
    """A process that attaches node `name` and waits; it has attached when this returns."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([PACKAGE_ROOT, *sys.path]))
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, name, str(state_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    wait_for_line(child, "ready")
    return child


@pytest.fixture
def attached_child(state_dir: Path, made: list[str]) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """A fresh node name and a process that has attached it; the process is killed
    and the namespace removed afterwards, whatever the test did to them."""
    name = node_name()
    made.append(name)
    child = start_child(name, state_dir)
    yield name, child
    if child.poll() is None:
        child.kill()
    child.communicate(timeout=TIMEOUT_S)


def test_a_killed_run_leaves_its_namespace_and_remove_stale_deletes_it(
    state_dir: Path, attached_child: tuple[str, subprocess.Popen[str]]
) -> None:
    name, child = attached_child
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=TIMEOUT_S)
    assert name in namespaces()  # the TUN went with the process; the namespace did not
    assert remove_stale(state_dir) == [name]
    assert name not in namespaces() and list(state_dir.iterdir()) == []
    assert remove_stale(state_dir) == []


def test_a_live_owners_namespace_stays_and_sigint_leaves_nothing(
    state_dir: Path, attached_child: tuple[str, subprocess.Popen[str]]
) -> None:
    name, child = attached_child
    assert remove_stale(state_dir) == []
    assert name in namespaces()
    with pytest.raises(NamespaceError, match=f"attached already, by iotbench process {child.pid}"):
        create_namespace(name, [], mtu=1280, routes=[], state_dir=state_dir)
    child.send_signal(signal.SIGINT)
    child.wait(timeout=TIMEOUT_S)
    assert name not in namespaces()
    assert list(state_dir.iterdir()) == []


def killed_runs_namespace(state_dir: Path, made: list[str]) -> str:
    """A namespace whose state file names our pid with another start time: what a
    killed run leaves once its pid is reused."""
    name = node_name()
    made.append(name)
    subprocess.run([IP, "netns", "add", name], check=True, timeout=TIMEOUT_S)
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / name).write_text(json.dumps({"pid": os.getpid(), "start_time": 1}))
    return name


def test_an_owner_whose_pid_was_reused_is_gone(
    state_dir: Path, made: list[str], attach: Attach
) -> None:
    stale, ours = killed_runs_namespace(state_dir, made), node_name()
    attach(ours, [])
    assert remove_stale(state_dir) == [stale]
    assert stale not in namespaces() and ours in namespaces()
    assert sorted(path.name for path in state_dir.iterdir()) == [ours]


def test_attaching_over_a_killed_runs_namespace_replaces_it(
    state_dir: Path, made: list[str], attach: Attach
) -> None:
    name = killed_runs_namespace(state_dir, made)
    ns = attach(name, [HostAddress("fd00::5", 64)], routes=["fd00::/64"])
    send_from(name, "fd00::9")
    assert [parse_udp6(packet)[4] for packet in wait_for_packets(ns, 1)] == [b"hello fd00::9"]
