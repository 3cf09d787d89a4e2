"""Network namespaces for emulated nodes: the host side of `iotbench emulate`.

Each simulated node a user attaches gets a Linux network namespace named
after the node, holding one TUN device, `iot0` (DEVICE), that carries the
node's addresses and routes. The user's program runs inside it
(`ip netns exec NODE PROGRAM`) and sees an ordinary network interface; every
packet it sends comes out of the TUN's file descriptor, which this process
keeps, and every packet written to that descriptor arrives at the program.
The simulator carries the packets in between, so the program talks over the
simulated network as if it were a real one.

    ns = create_namespace("sensor-1", [HostAddress("fd00::5", 64)], mtu=1280, routes=["::/0"])
    try:
        sent = ns.read_packets()     # the raw IP packets the node's program sent
        ns.write_packet(packet)      # one the network delivers to the node
    finally:
        ns.close()                   # the device, the namespace and the state file go

The namespace holds exactly the addresses it is given: it gets no
automatic IPv6 link-local address and sends no router solicitations, so
what comes out of the TUN is the program's traffic (plus what the kernel
says on the program's behalf, such as ICMP errors).

Crash safety. The TUN is not persistent: when this process exits, however it
exits, the kernel closes the descriptor and the device goes. The namespace
does not: it is a file under /run/netns and outlives a killed run. So before
creating one, `create_namespace` writes a state file, STATE_DIR/NODE, naming
its owner: our pid and that process's start time (a pid alone may be
reused). STATE_DIR is $IOTBENCH_EMULATE_STATE, by default
/run/iotbench-emulate. `remove_stale` deletes the namespaces whose owner is
gone, and `create_namespace` does the same for the one name it is asked
for, so the next run cleans up after a killed one. A namespace whose owner
is alive, or that iotbench did not make, is never touched.

Needs root (or CAP_NET_ADMIN and CAP_SYS_ADMIN), /dev/net/tun and the `ip`
command of iproute2.
"""

from __future__ import annotations

import errno
import fcntl
import ipaddress
import json
import os
import re
import shutil
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from iotbench.scenarios.errors import UserError

DEFAULT_STATE_DIR = Path(os.environ.get("IOTBENCH_EMULATE_STATE", "/run/iotbench-emulate"))

# The TUN's name inside every namespace. Each namespace has its own device
# names, so one stable name serves all nodes and users' scripts can rely on it.
DEVICE = "iot0"

IP = shutil.which("ip") or "/usr/sbin/ip"
SYSCTL = shutil.which("sysctl") or "/usr/sbin/sysctl"
IP_TIMEOUT_S = 10.0

# A namespace's name is a file name under /run/netns.
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")

# <linux/if_tun.h>
_TUNSETIFF = 0x400454CA
_IFF_TUN = 0x0001
_IFF_NO_PI = 0x1000
# The TUN is born in our own namespace before it moves to the node's, so its
# first name must not clash with any device there, nor with another run's
# device on its way: the kernel replaces %d with the lowest free number.
_TEMPORARY_DEVICE = b"iotb%d"
# struct ifreq: the name (IFNAMSIZ = 16, NUL included), the flags, padding to 40 bytes.
_IFREQ = struct.Struct("16sH22x")

# Larger than any IP packet without jumbograms: one read returns one whole packet.
_READ_SIZE = 65536
_IPV6_MIN_MTU = 1280
_TUN_MTU_RANGE = (68, 65535)

_NO_PERMISSION = (
    "creating a network namespace with a TUN device needs root (or the capabilities "
    "CAP_NET_ADMIN and CAP_SYS_ADMIN) and /dev/net/tun: run iotbench emulate as root"
)


class NamespaceError(UserError):
    """A node's namespace cannot be made or used; the message says why and what to do."""


@dataclass(frozen=True)
class HostAddress:
    """An address of an attached node and its prefix length: ("fd00::5", 64), ("10.0.0.2", 24)."""

    address: str
    prefix_len: int


class AttachedNamespace:
    """A node's namespace and the descriptor of its TUN device (`create_namespace` makes one).

    `fd` is non-blocking and carries bare IP packets (no packet information
    header): one read is one packet, one write is one packet.
    """

    def __init__(self, name: str, device: str, fd: int, state_file: Path) -> None:
        self.name = name
        self.device = device
        self.fd = fd
        # Packets the kernel refused (write_packet): the network lost them.
        self.dropped_writes = 0
        self._state_file = state_file
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def read_packets(self) -> list[bytes]:
        """Every packet the node's programs have sent and we have not read yet."""
        self._check_open()
        packets = []
        while True:
            try:
                packets.append(os.read(self.fd, _READ_SIZE))
            except BlockingIOError:
                return packets
            except OSError as error:
                raise self._translate(error) from error

    def write_packet(self, packet: bytes) -> None:
        """Deliver an IP packet to the node; one the kernel refuses is dropped and counted.

        The kernel refuses a packet that is not IP (EINVAL) and every packet
        while the device is down (EIO); a lossy network may lose packets, so
        these count in `dropped_writes` instead of stopping the emulation.
        """
        self._check_open()
        try:
            os.write(self.fd, packet)
        except OSError as error:
            if error.errno in (errno.EAGAIN, errno.EINVAL, errno.EIO):
                self.dropped_writes += 1
                return
            raise self._translate(error) from error

    def close(self) -> None:
        """Close the TUN (the device goes with it), delete the namespace and its state file.

        Calling it again does nothing. Programs still running in the namespace
        keep running, without a network.
        """
        if self._closed:
            return
        self._closed = True
        os.close(self.fd)
        _delete_namespace(self.name)
        self._state_file.unlink(missing_ok=True)

    def __enter__(self) -> AttachedNamespace:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"fd={self.fd}"
        return f"AttachedNamespace({self.name!r}, device={self.device!r}, {state})"

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"the namespace of node {self.name} is closed")

    def _translate(self, error: OSError) -> Exception:
        # The kernel destroys the device when its namespace goes away, and the
        # descriptor then answers every read and write with EBADFD.
        if error.errno == errno.EBADFD:
            return NamespaceError(
                f"the TUN device of node {self.name} is gone (was its namespace deleted, "
                f"e.g. with `ip netns del {self.name}`?): attach the node again"
            )
        return error


def create_namespace(
    name: str,
    addresses: list[HostAddress],
    *,
    mtu: int,
    routes: list[str],
    state_dir: Path = DEFAULT_STATE_DIR,
) -> AttachedNamespace:
    """Make node `name`'s namespace with its TUN device `iot0`, configured and up.

    The device gets `mtu`, `addresses` and a route through it to each prefix
    in `routes` ("fd00::/64", "::/0", "0.0.0.0/0"). IPv6 addresses are usable
    at once (no duplicate address detection). A namespace of the same name
    left by a killed run is removed first; any other of that name is an
    error. If anything fails, whatever was made is removed again.
    """
    check_name(name)
    interfaces = _interfaces(name, addresses, mtu)
    networks = _networks(name, routes)
    state_file = _claim(name, state_dir)
    fd: int | None = None
    created = False
    try:
        _add_namespace(name)
        created = True
        fd, temporary = _open_tun(name)
        _ip(name, "link", "set", "dev", temporary, "netns", name, "name", DEVICE)
        _configure(name, interfaces, mtu, networks)
        return AttachedNamespace(name, DEVICE, fd, state_file)
    except BaseException:
        if fd is not None:
            os.close(fd)
        if created:
            _delete_namespace(name, strict=False)
        state_file.unlink(missing_ok=True)
        raise


def remove_stale(state_dir: Path = DEFAULT_STATE_DIR) -> list[str]:
    """Delete the namespaces whose owning process is gone; return their names.

    Namespaces of live owners, and those with no state file in `state_dir`
    (which iotbench did not make), are left alone.
    """
    if not state_dir.is_dir():
        return []
    removed = []
    for state_file in sorted(state_dir.iterdir()):
        # Other files (a state file still being written) are not state files.
        if not _NAME.fullmatch(state_file.name) or state_file.name in (".", ".."):
            continue
        owner = _Owner.read(state_file)
        if owner is not None and owner.alive():
            continue
        if _delete_namespace(state_file.name):
            removed.append(state_file.name)
        state_file.unlink(missing_ok=True)
    return removed


def check_name(name: str) -> None:
    """Raise NamespaceError unless `name` can name a network namespace."""
    if not _NAME.fullmatch(name) or name in (".", ".."):
        raise NamespaceError(
            f"node {name!r} cannot name a network namespace: use 1 to 64 letters, digits, "
            f"'_', '.' and '-' (not '.' or '..')"
        )


@dataclass(frozen=True)
class _Owner:
    """The process that made a namespace: its pid and start time (in clock ticks since boot)."""

    pid: int
    start_time: int

    @classmethod
    def me(cls) -> _Owner:
        start_time = _start_time(os.getpid())
        assert start_time is not None  # we are running
        return cls(os.getpid(), start_time)

    @classmethod
    def read(cls, state_file: Path) -> _Owner | None:
        """The owner a state file names, or None if it names none (it is then stale)."""
        try:
            data = json.loads(state_file.read_text())
            return cls(int(data["pid"]), int(data["start_time"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def alive(self) -> bool:
        return _start_time(self.pid) == self.start_time

    def text(self) -> str:
        return json.dumps({"pid": self.pid, "start_time": self.start_time}) + "\n"


def _start_time(pid: int) -> int | None:
    """When process `pid` started (/proc/PID/stat field 22), or None if it has ended."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The command name (field 2) may hold spaces and parentheses; it ends at the last ')'.
    fields = stat[stat.rindex(")") + 2 :].split()
    state, start_time = fields[0], fields[19]
    # A zombie has closed its descriptors: its TUNs are gone, so it owns nothing.
    if state in ("Z", "X"):
        return None
    return int(start_time)


def _claim(name: str, state_dir: Path) -> Path:
    """Write our state file for `name`, removing a stale namespace first; return the file."""
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
    except PermissionError as error:
        raise NamespaceError(f"cannot create {state_dir}: {_NO_PERMISSION}") from error
    state_file = state_dir / name
    # The file appears whole or not at all (link refuses to replace one), so no
    # one reads a half-written owner, and of two runs attaching the same node
    # at once only one gets it.
    temporary = state_dir / f"{name}~{os.getpid()}"
    temporary.write_text(_Owner.me().text())
    try:
        for _ in range(2):
            try:
                os.link(temporary, state_file)
                return state_file
            except FileExistsError:
                pass
            owner = _Owner.read(state_file)
            if owner == _Owner.me():
                raise NamespaceError(f"node {name} is attached already, by this process")
            if owner is not None and owner.alive():
                raise NamespaceError(
                    f"node {name} is attached already, by iotbench process {owner.pid} "
                    f"(still running): stop that run or attach another node"
                )
            # A killed run's: its namespace goes before we make ours.
            _delete_namespace(name)
            state_file.unlink(missing_ok=True)
        raise NamespaceError(f"node {name} is being attached by another run: try again")
    finally:
        temporary.unlink(missing_ok=True)


def _add_namespace(name: str) -> None:
    try:
        _run_ip("netns", "add", name)
    except subprocess.CalledProcessError as error:
        if "File exists" in error.stderr:
            raise NamespaceError(
                f"namespace {name} exists already: remove it with `ip netns del {name}` "
                f"or attach another node"
            ) from error
        raise _ip_error(name, ("netns", "add", name), error.stderr) from error


def _delete_namespace(name: str, *, strict: bool = True) -> bool:
    """Delete namespace `name`; False if there was none. With strict=False, never raise."""
    try:
        _run_ip("netns", "del", name)
        return True
    except subprocess.CalledProcessError as error:
        if "No such file or directory" in error.stderr or not strict:
            return False
        raise _ip_error(name, ("netns", "del", name), error.stderr) from error


def _open_tun(name: str) -> tuple[int, str]:
    """A new TUN device in our own namespace: its descriptor and (temporary) name."""
    try:
        fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError as error:
        raise NamespaceError(
            "/dev/net/tun does not exist: load the tun module (`modprobe tun`), "
            "or in a container pass the device in (e.g. `--device /dev/net/tun`)"
        ) from error
    except PermissionError as error:
        raise NamespaceError(_NO_PERMISSION) from error
    try:
        request = _IFREQ.pack(_TEMPORARY_DEVICE, _IFF_TUN | _IFF_NO_PI)
        answer = fcntl.ioctl(fd, _TUNSETIFF, request)
    except OSError as error:
        os.close(fd)
        if error.errno in (errno.EPERM, errno.EACCES):
            raise NamespaceError(_NO_PERMISSION) from error
        raise NamespaceError(
            f"cannot create a TUN device for node {name}: {error.strerror}"
        ) from error
    device = _IFREQ.unpack(answer)[0].split(b"\0", 1)[0].decode()
    return fd, device


def _configure(
    name: str,
    interfaces: list[ipaddress.IPv4Interface | ipaddress.IPv6Interface],
    mtu: int,
    networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network],
) -> None:
    _ip(name, "-n", name, "link", "set", "dev", "lo", "up")
    # No automatic link-local address: the namespace has exactly the addresses
    # it is given, and without one the kernel sends no router solicitations.
    _ip(name, "-n", name, "link", "set", "dev", DEVICE, "mtu", str(mtu), "addrgenmode", "none")
    if any(interface.version == 6 for interface in interfaces):
        # A link-local address among the given ones would still solicit routers
        # (and accept their advertisements): the simulated network has none to ask.
        # No flow labels: Linux gives every flow one (RFC 6437), which 6LoWPAN then
        # carries inline in every frame (RFC 6282 TF); Contiki and RIOT send zero,
        # so the host's packets compress as the node's own would.
        _ip(
            name,
            *("netns", "exec", name, SYSCTL, "-q", "-w"),
            f"net.ipv6.conf.{DEVICE}.accept_ra=0",
            f"net.ipv6.conf.{DEVICE}.router_solicitations=0",
            "net.ipv6.auto_flowlabels=0",
        )
    for interface in interfaces:
        # nodad: duplicate address detection would hold the address back for
        # a second or more and send its probes into the simulated network.
        nodad = ("nodad",) if interface.version == 6 else ()
        _ip(name, "-n", name, "address", "add", str(interface), "dev", DEVICE, *nodad)
    _ip(name, "-n", name, "link", "set", "dev", DEVICE, "up")
    # The kernel routes each address's own prefix through the device already;
    # adding that route again would fail.
    routed = {interface.network for interface in interfaces}
    for network in networks:
        if network not in routed:
            _ip(
                name, "-n", name, f"-{network.version}", "route", "add", str(network), "dev", DEVICE
            )
            routed.add(network)


def _interfaces(
    name: str, addresses: list[HostAddress], mtu: int
) -> list[ipaddress.IPv4Interface | ipaddress.IPv6Interface]:
    interfaces = []
    for address in addresses:
        try:
            interfaces.append(ipaddress.ip_interface(f"{address.address}/{address.prefix_len}"))
        except ValueError as error:
            raise NamespaceError(
                f"node {name}: {address.address}/{address.prefix_len} is not an IP address "
                f"with a prefix length ({error})"
            ) from error
    low, high = _TUN_MTU_RANGE
    if not low <= mtu <= high:
        raise NamespaceError(f"node {name}: an MTU of {mtu} is out of range: use {low} to {high}")
    if mtu < _IPV6_MIN_MTU and any(interface.version == 6 for interface in interfaces):
        # The kernel refuses IPv6 addresses on such a device (IPv6 needs 1280).
        raise NamespaceError(
            f"node {name}: an IPv6 address needs an MTU of at least {_IPV6_MIN_MTU}, not {mtu}"
        )
    return interfaces


def _networks(name: str, routes: list[str]) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    networks = []
    for route in routes:
        try:
            networks.append(ipaddress.ip_network(route))
        except ValueError as error:
            raise NamespaceError(
                f"node {name}: route {route!r} is not a prefix like 'fd00::/64', '::/0' "
                f"or '10.0.0.0/24' ({error})"
            ) from error
    return networks


def _run_ip(*args: str) -> None:
    """Run `ip ARGS`; CalledProcessError (with stderr) if it fails."""
    try:
        subprocess.run(
            [IP, *args], check=True, capture_output=True, text=True, timeout=IP_TIMEOUT_S
        )
    except FileNotFoundError as error:
        raise NamespaceError(f"the `ip` command is missing ({IP}): install iproute2") from error
    except subprocess.TimeoutExpired as error:
        raise NamespaceError(
            f"`ip {' '.join(args)}` did not finish in {IP_TIMEOUT_S:g} s"
        ) from error


def _ip(name: str, *args: str) -> None:
    """Run `ip ARGS` for node `name`; NamespaceError if it fails."""
    try:
        _run_ip(*args)
    except subprocess.CalledProcessError as error:
        raise _ip_error(name, args, error.stderr) from error


def _ip_error(name: str, args: tuple[str, ...], stderr: str | None) -> NamespaceError:
    message = (stderr or "").strip()
    if "Operation not permitted" in message or "Permission denied" in message:
        return NamespaceError(_NO_PERMISSION)
    return NamespaceError(f"node {name}: `ip {' '.join(args)}` failed: {message or 'no message'}")
