"""A real CoAP server's group memberships: one receiving socket per IPv6 group.

`iotbench serve coap` serves /mc (proto/coap/group.py); joining a group
opens a UDP socket bound to the group address and the server's port, joined
to the group (IPV6_JOIN_GROUP) on the server's interface. What arrives there
was sent to the group: it goes to the endpoint as multicast
(receive(..., multicast=True)), and the answer leaves by the server's own
unicast socket, as RFC 7252 8.1 wants. The operating system decides whether
the interface takes multicast; when it refuses, the OSError reaches /mc,
which answers 5.00 with the reason.
"""

from __future__ import annotations

import ipaddress
import socket
import struct

from iotbench.real.driver import AsyncDatagramDriver


class GroupSockets:
    def __init__(self, driver: AsyncDatagramDriver) -> None:
        self.driver = driver
        self._sockets: dict[bytes, socket.socket] = {}
        transport = driver.transport
        assert transport is not None  # the driver of a server that is open
        host, port = transport.get_extra_info("sockname")[:2]
        self.port = port
        self.family = transport.get_extra_info("socket").family
        self.ifindex = interface_index(host)

    def groups(self) -> list[bytes]:
        return list(self._sockets)

    def join(self, group: bytes) -> None:
        if self.family != socket.AF_INET6:
            raise OSError(
                "this server's socket is IPv4; serve on an IPv6 address (e.g. --host ::) "
                "to join IPv6 groups"
            )
        sock = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setblocking(False)
            sock.bind((str(ipaddress.IPv6Address(group)), self.port, 0, self.ifindex))
            mreq = group + struct.pack("@I", self.ifindex)
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP, mreq)
        except OSError:
            sock.close()
            raise
        self._sockets[group] = sock
        assert self.driver.loop is not None  # set with the transport
        self.driver.loop.add_reader(sock.fileno(), self._readable, sock)

    def leave(self, group: bytes) -> None:
        sock = self._sockets.pop(group)
        assert self.driver.loop is not None  # set with the transport
        self.driver.loop.remove_reader(sock.fileno())
        sock.close()

    def close(self) -> None:
        for group in list(self._sockets):
            self.leave(group)

    def _readable(self, sock: socket.socket) -> None:
        try:
            data, addr = sock.recvfrom(65535)
        except OSError:
            return
        driver = self.driver
        driver.stack.receive(driver.now(), data, (addr[0], addr[1]), multicast=True)
        driver.pump()


def interface_index(host: str) -> int:
    """The interface an IPv6 address belongs to: its zone (fe80::1%eth0), or on
    Linux the interface that holds it (/proc/net/if_inet6); else 0, the
    kernel's choice. Group traffic then stays on the server's own interface."""
    address, _, zone = host.partition("%")
    if zone:
        try:
            return int(zone) if zone.isdigit() else socket.if_nametoindex(zone)
        except OSError:
            return 0
    try:
        wanted = ipaddress.IPv6Address(address).packed.hex()
        with open("/proc/net/if_inet6") as table:
            for line in table:
                fields = line.split()
                if fields and fields[0] == wanted:
                    return int(fields[1], 16)
    except (OSError, ValueError):
        pass
    return 0
