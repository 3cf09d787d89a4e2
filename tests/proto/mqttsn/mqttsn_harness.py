"""Test helpers: MQTT-SN clients, one gateway and an MqttBroker (plus plain MQTT
clients) joined by in-memory pipes, with a fake clock.

Nothing here uses the simulator. Datagrams between MQTT-SN clients and the
gateway take `delay_s`; `drop(now, src, dst, message)` may lose any of them.
The gateway's broker streams and plain MQTT clients' connections are ordered
byte pipes of `broker_delay_s`. Every datagram is logged decoded as (time,
src, dst, message), dropped or not. A datagram sent to BROADCAST reaches
every MQTT-SN client but its sender, and the gateway.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable

from iotbench.proto.mqtt.broker import MqttBroker
from iotbench.proto.mqtt.client import MqttClient
from iotbench.proto.mqtt.params import MqttBrokerParams, MqttClientParams
from iotbench.proto.mqttsn.client import MqttSnClient
from iotbench.proto.mqttsn.codec import Encapsulated, Message, decode, encode
from iotbench.proto.mqttsn.gateway import MqttSnGateway
from iotbench.proto.mqttsn.params import MqttSnClientParams, MqttSnGatewayParams

GW = ("10.0.0.1", 1884)
BROADCAST = ("10.0.0.255", 1884)
GATEWAY = "gateway"

Drop = Callable[[float, str, str, Message], bool]


def client_addr(name: str) -> tuple[str, int]:
    return (f"sn-{name}", 1000)


class Net:
    """run(until) advances virtual time, moves datagrams and bytes, fires timers."""

    def __init__(
        self,
        gateway: MqttSnGateway | None = None,
        broker: MqttBroker | None = None,
        delay_s: float = 0.01,
        broker_delay_s: float = 0.001,
        drop: Drop | None = None,
        broker_reachable: bool = True,
        **gateway_params,
    ) -> None:
        self.gateway = gateway or MqttSnGateway(
            random.Random(1), MqttSnGatewayParams(**gateway_params)
        )
        self.broker = broker or MqttBroker(random.Random(2), MqttBrokerParams())
        self.delay_s = delay_s
        self.broker_delay_s = broker_delay_s
        self.drop = drop or (lambda *a: False)
        self.broker_reachable = broker_reachable
        self.now = 0.0
        self.clients: dict[str, MqttSnClient] = {}
        self.events: dict[str, list] = {}
        self.gw_events: list = []
        self.mqtt: dict[str, MqttClient] = {}
        self.log: list[tuple[float, str, str, Message]] = []
        self._names = {GW: GATEWAY}
        self._flight: list = []
        self._seq = 0
        self._open_streams: set[int] = set()
        self._closed_opening: set[int] = set()  # closed by the gateway while opening
        self._open_mqtt: set[str] = set()

    # ---- set-up -----------------------------------------------------------------------

    def add(self, name: str, seed: int | None = None, **params) -> MqttSnClient:
        params.setdefault("client_id", name)
        c = MqttSnClient(
            random.Random(seed or len(self.clients) + 10), MqttSnClientParams(**params)
        )
        self.clients[name] = c
        self.events[name] = []
        self._names[client_addr(name)] = name
        return c

    def add_mqtt(self, name: str, **params) -> MqttClient:
        """A plain MQTT client of the broker (e.g. a subscriber), connected now."""
        params.setdefault("client_id", name)
        c = MqttClient(random.Random(len(self.mqtt) + 50), MqttClientParams(**params))
        self.mqtt[name] = c
        self.events[name] = []
        self.broker.connection_made(self.now, ("mqtt", name))
        self._open_mqtt.add(name)
        c.connect(self.now)
        self.collect()
        return c

    # ---- moving things ------------------------------------------------------------------

    def _put(self, delay: float, action: Callable[[], None]) -> None:
        self._seq += 1
        heapq.heappush(self._flight, (self.now + delay, self._seq, action))

    def _datagram(self, src: str, data: bytes, dst_addr) -> None:
        message = decode(data)
        assert encode(message) == data, "a stack emitted non-canonical bytes"
        if type(message) is Encapsulated:
            inner = decode(message.message)
            assert encode(inner) == message.message
        if dst_addr == BROADCAST:
            targets = [n for n in self.clients if n != src]
            if src != GATEWAY:
                targets.append(GATEWAY)
            dst = "broadcast"
        else:
            dst = self._names.get(dst_addr, "?")
            targets = [dst] if dst != "?" else []
        self.log.append((self.now, src, dst, message))
        if self.drop(self.now, src, dst, message):
            return
        src_addr = GW if src == GATEWAY else client_addr(src)
        for target in targets:
            self._put(self.delay_s, lambda t=target: self._receive(t, data, src_addr))

    def _receive(self, target: str, data: bytes, src_addr) -> None:
        if target == GATEWAY:
            self.gateway.receive(self.now, data, src_addr)
        else:
            self.clients[target].receive(self.now, data, src_addr)

    def collect(self) -> None:
        """Move every stack's output onto the pipes and its events into lists."""
        gw, broker = self.gateway, self.broker
        for _ in range(1000):
            moved = False
            for name, c in self.clients.items():
                for data, addr in c.datagrams_to_send():
                    self._datagram(name, data, addr)
                    moved = True
                self.events[name].extend(c.events())
            for data, addr in gw.datagrams_to_send():
                self._datagram(GATEWAY, data, addr)
                moved = True
            for stream in gw.streams_to_open():
                moved = True
                self._put(self.broker_delay_s, lambda s=stream: self._opened(s))
            for stream, data in gw.stream_data_to_send():
                moved = True
                if stream in self._open_streams:
                    self._put(
                        self.broker_delay_s,
                        lambda s=stream, d=data: broker.receive_data(self.now, ("gw", s), d),
                    )
            for stream in gw.streams_to_close():
                moved = True
                if stream in self._open_streams:
                    self._open_streams.discard(stream)
                    self._put(
                        self.broker_delay_s,
                        lambda s=stream: broker.connection_lost(self.now, ("gw", s)),
                    )
                else:
                    self._closed_opening.add(stream)
            self.gw_events.extend(gw.events())
            for name, c in self.mqtt.items():
                data = c.data_to_send()
                if data and name in self._open_mqtt:
                    moved = True
                    self._put(
                        self.broker_delay_s,
                        lambda n=name, d=data: broker.receive_data(self.now, ("mqtt", n), d),
                    )
                if c.close_requested and name in self._open_mqtt:
                    self._open_mqtt.discard(name)
                    self._put(
                        self.broker_delay_s,
                        lambda n=name: broker.connection_lost(self.now, ("mqtt", n)),
                    )
                self.events[name].extend(c.events())
            for conn, data in broker.data_to_send():
                moved = True
                self._put(self.broker_delay_s, lambda c=conn, d=data: self._from_broker(c, d))
            for conn in broker.connections_to_close():
                moved = True
                self._put(self.broker_delay_s, lambda c=conn: self._broker_closed(c))
            broker.events()
            if not moved:
                return
        raise AssertionError("stacks keep producing output without time passing")

    def _opened(self, stream: int) -> None:
        if stream in self._closed_opening:
            self._closed_opening.discard(stream)
            return  # a driver closes it as soon as it is open: the broker never sees it
        if not self.broker_reachable:
            self.gateway.stream_lost(self.now, stream)
            return
        self._open_streams.add(stream)
        self.broker.connection_made(self.now, ("gw", stream))
        self.gateway.stream_connected(self.now, stream)

    def _from_broker(self, conn, data: bytes) -> None:
        kind, key = conn
        if kind == "gw":
            if key in self._open_streams:
                self.gateway.stream_receive(self.now, key, data)
        elif key in self._open_mqtt:
            self.mqtt[key].receive_data(self.now, data)

    def _broker_closed(self, conn) -> None:
        kind, key = conn
        if kind == "gw":
            if key in self._open_streams:
                self._open_streams.discard(key)
                self.gateway.stream_lost(self.now, key)
        elif key in self._open_mqtt:
            self._open_mqtt.discard(key)
            self.mqtt[key].connection_lost(self.now)

    def _stacks(self):
        return [self.gateway, self.broker, *self.clients.values(), *self.mqtt.values()]

    def run(self, until: float) -> None:
        """Advance virtual time to `until`, delivering everything and firing timers."""
        self.collect()
        while True:
            times = [self._flight[0][0]] if self._flight else []
            times += [t for s in self._stacks() if (t := s.next_timer()) is not None]
            t = min(times, default=None)
            if t is None or t > until:
                break
            self.now = max(self.now, t)
            while self._flight and self._flight[0][0] <= self.now:
                heapq.heappop(self._flight)[2]()
                self.collect()
            for stack in self._stacks():
                t = stack.next_timer()
                if t is not None and t <= self.now:
                    stack.handle_timer(self.now)
            self.collect()
        self.now = until

    def step(self, dt: float = 1.0) -> None:
        self.run(self.now + dt)

    # ---- reading results --------------------------------------------------------------

    def take(self, name: str, kind: type | None = None) -> list:
        """Events of `name` so far (of one class), removed from its list."""
        events = self.events[name]
        if kind is None:
            self.events[name] = []
            return events
        picked = [e for e in events if isinstance(e, kind)]
        self.events[name] = [e for e in events if not isinstance(e, kind)]
        return picked

    def sent(self, src: str, kind: type) -> list[tuple[float, Message]]:
        """(time, message) of every `kind` datagram `src` sent (dropped or not)."""
        return [(t, m) for t, s, _, m in self.log if s == src and isinstance(m, kind)]

    def kinds(self, src: str | None = None) -> list[str]:
        """Names of the message types on the air, in order (optionally from one sender)."""
        return [type(m).__name__ for _, s, _, m in self.log if src is None or s == src]
