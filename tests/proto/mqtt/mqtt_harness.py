"""Test helpers: one broker and named clients joined by in-memory byte pipes, a fake clock.

Nothing here uses the simulator. Each direction of a connection is an
ordered byte pipe with a fixed delay; `drop(now, src, dst, packet)` may lose
whole packets (which TCP would not do: it stands for a peer that lost a
message, to force MQTT's own re-sends), and `chunk` cuts each delivery into
pieces of random size to exercise the stream framers.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable

from iotbench.proto.mqtt.broker import MqttBroker
from iotbench.proto.mqtt.client import MqttClient
from iotbench.proto.mqtt.codec import Packet, decode, encode, split_packets
from iotbench.proto.mqtt.events import ClientEvent
from iotbench.proto.mqtt.params import MqttBrokerParams, MqttClientParams

BROKER = "broker"

Drop = Callable[[float, str, str, Packet], bool]


def client(seed: int = 2, **params) -> MqttClient:
    return MqttClient(random.Random(seed), MqttClientParams(**params))


def broker(seed: int = 1, **params) -> MqttBroker:
    return MqttBroker(random.Random(seed), MqttBrokerParams(**params))


class Net:
    """A broker and clients; `run(until)` advances virtual time and moves bytes.

    A connection of client `name` is known to the broker as (name, n), n
    counting that client's connections, so late bytes of an old connection
    never reach a new one. Every packet put on a pipe is logged as
    (time, src, dst, packet), dropped or not.
    """

    def __init__(
        self,
        mqtt_broker: MqttBroker | None = None,
        delay_s: float = 0.01,
        drop: Drop | None = None,
        chunk: int | None = None,
        seed: int = 0,
    ) -> None:
        self.broker = mqtt_broker or broker()
        self.clients: dict[str, MqttClient] = {}
        self.events: dict[str, list[ClientEvent]] = {}
        self.broker_events: list = []
        self.delay_s = delay_s
        self.drop = drop or (lambda *a: False)
        self.chunk = chunk
        self.rng = random.Random(seed)
        self.now = 0.0
        self.log: list[tuple[float, str, str, Packet]] = []
        self._conn: dict[str, tuple[str, int] | None] = {}
        self._generation: dict[str, int] = {}
        self._flight: list[tuple[float, int, str, object, bytes | None]] = []
        self._seq = 0

    # ---- set-up -----------------------------------------------------------------------

    def add(self, name: str, mqtt_client: MqttClient | None = None, **params) -> MqttClient:
        c = mqtt_client or client(seed=len(self.clients) + 2, client_id=name, **params)
        self.clients[name] = c
        self.events[name] = []
        self._conn[name] = None
        self._generation.setdefault(name, 0)  # a replacement client gets new connection ids
        return c

    def open(self, name: str) -> None:
        """A new transport connection for `name`, then CONNECT (instant handshake)."""
        self._generation[name] += 1
        conn = (name, self._generation[name])
        self._conn[name] = conn
        self.broker.connection_made(self.now, conn)
        self.clients[name].connect(self.now)
        self.collect()

    def cut(self, name: str) -> None:
        """The connection breaks (no FIN, no DISCONNECT): both ends learn it now."""
        conn = self._conn[name]
        if conn is None:
            return
        self._conn[name] = None
        self.broker.connection_lost(self.now, conn)
        self.clients[name].connection_lost(self.now)
        self.collect()

    def connection(self, name: str) -> tuple[str, int] | None:
        return self._conn[name]

    # ---- moving bytes -------------------------------------------------------------------

    def _put(self, when: float, dst: str, conn: object, data: bytes | None) -> None:
        self._seq += 1
        heapq.heappush(self._flight, (when, self._seq, dst, conn, data))

    def _send(self, src: str, dst: str, conn: tuple[str, int], data: bytes) -> None:
        kept = []
        for raw in split_packets(data):
            packet = decode(raw)
            assert encode(packet) == raw, "a stack emitted non-canonical bytes"
            self.log.append((self.now, src, dst, packet))
            if not self.drop(self.now, src, dst, packet):
                kept.append(raw)
        if not kept:
            return
        data = b"".join(kept)
        if self.chunk:
            while data:
                n = self.rng.randint(1, self.chunk)
                self._put(self.now + self.delay_s, dst, conn, data[:n])
                data = data[n:]
        else:
            self._put(self.now + self.delay_s, dst, conn, data)

    def collect(self) -> None:
        """Move every output of every stack onto the pipes, and events into lists."""
        for _ in range(100):
            moved = False
            for name, c in self.clients.items():
                conn = self._conn[name]
                data = c.data_to_send()
                if data and conn is not None:
                    self._send(name, BROKER, conn, data)
                    moved = True
                if c.close_requested and conn is not None:
                    # FIN after the data: the broker learns after the same delay.
                    self._conn[name] = None
                    self._put(self.now + self.delay_s, BROKER, conn, None)
                self.events[name].extend(c.events())
            for conn, data in self.broker.data_to_send():
                name = conn[0]
                if self._conn.get(name) == conn:
                    self._send(BROKER, name, conn, data)
                    moved = True
            for conn in self.broker.connections_to_close():
                name = conn[0]
                if self._conn.get(name) == conn:
                    self._conn[name] = None
                    self._put(self.now + self.delay_s, name, conn, None)
            self.broker_events.extend(self.broker.events())
            if not moved:
                return
        raise AssertionError("stacks keep producing output without time passing")

    def _deliver(self, dst: str, conn, data: bytes | None) -> None:
        if dst == BROKER:
            if data is None:
                self.broker.connection_lost(self.now, conn)
            else:
                self.broker.receive_data(self.now, conn, data)
        else:
            c = self.clients[dst]
            if data is None:
                c.connection_lost(self.now)
            elif conn == (dst, self._generation[dst]):  # not bytes of an older connection
                c.receive_data(self.now, data)

    def _next_time(self) -> float | None:
        times = [self._flight[0][0]] if self._flight else []
        for stack in (self.broker, *self.clients.values()):
            t = stack.next_timer()
            if t is not None:
                times.append(t)
        return min(times) if times else None

    def run(self, until: float) -> None:
        """Advance virtual time to `until`, delivering bytes and firing timers."""
        self.collect()
        while True:
            t = self._next_time()
            if t is None or t > until:
                break
            self.now = max(self.now, t)
            while self._flight and self._flight[0][0] <= self.now:
                _, _, dst, conn, data = heapq.heappop(self._flight)
                self._deliver(dst, conn, data)
                self.collect()
            for stack in (self.broker, *self.clients.values()):
                t = stack.next_timer()
                if t is not None and t <= self.now:
                    stack.handle_timer(self.now)
            self.collect()
        self.now = until

    # ---- reading results --------------------------------------------------------------

    def take(self, name: str, kind: type | None = None) -> list:
        """Events of client `name` so far (of one class), removed from the list."""
        events = self.events[name]
        if kind is None:
            self.events[name] = []
            return events
        picked = [e for e in events if isinstance(e, kind)]
        self.events[name] = [e for e in events if not isinstance(e, kind)]
        return picked

    def sent(self, src: str, kind: type) -> list[tuple[float, Packet]]:
        """(time, packet) of every `kind` packet `src` put on a pipe."""
        return [(t, p) for t, s, _, p in self.log if s == src and isinstance(p, kind)]
