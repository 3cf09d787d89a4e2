"""The publish workload: every producer sends its readings to the gateway.

`workload.kind = "publish"`: each producer takes a reading every
`interval_s`, the first at a uniformly random phase in [0, interval_s) after
`start_s` (producers are not coordinated), `items` readings each. A reading
is S4's 32-byte JSON object, {"id":"0x..........","val":NNNN}, whose id
names the producer and the reading's number, so the gateway knows which item
arrived. An item is delivered when its reading first reaches the client
node's application (the gateway, or the host behind its uplink); that is
its time to content arrival.

With CoAP (the protocol this workload has so far), the producer PUTs the
reading to the gateway's server at `workload.path`, confirmable or not as
`protocol.coap.type` says. A CON item is given up when the producer's
endpoint gives up (MAX_RETRANSMIT). A NON reading carries No-Response 26
(RFC 7967): the producer wants nothing back, so the gateway sends nothing and
the producer's next reading never waits for a response (NSTART); the item is
handed over when it is sent, and one that has not arrived `drain_s` later is
given up (as of its hand-over), so the readings the run keeps track of are
those of the last `drain_s` only, however long it runs. The run ends
`drain_s` after the last reading was taken, or sooner when every item has
ended.
"""

from __future__ import annotations

import json
from collections import deque

from iotbench.apps.driver import DatagramDriver
from iotbench.metrics.items import DELIVERED, GIVEN_UP, Item, ItemLog
from iotbench.net.ip import address_text
from iotbench.proto.coap import codec
from iotbench.proto.coap.endpoint import (
    NO_RESPONSE_ALL,
    CoapEndpoint,
    RequestFailed,
    ResourceResponse,
)
from iotbench.proto.coap.options import Opt
from iotbench.sim import Simulator
from iotbench.world.coap import COAP_PORT, coap_params
from iotbench.world.network import Network

_COUNTER_BITS = 24


def reading_id(producer: int, counter: int) -> int:
    return (producer << _COUNTER_BITS) | counter


def reading(producer: int, counter: int, value: int) -> bytes:
    """S4's reading: a 32-byte JSON object with a unique id and a value."""
    body = {"id": f"0x{reading_id(producer, counter):010x}", "val": value}
    return json.dumps(body, separators=(",", ":")).encode()


class PublishWorkload:
    def __init__(self, sim: Simulator, net: Network, config: dict, items: ItemLog) -> None:
        workload = config["workload"]
        cfg = config["protocol"]["coap"]
        self.sim = sim
        self.items = items
        self.per_producer = workload["items"]
        self.interval_s = workload["interval_s"]
        self.start_s = workload["start_s"]
        self.drain_s = workload["drain_s"]
        self.path = workload["path"]
        self.confirmable = cfg["type"] == "con"
        self._open: dict[int, Item] = {}  # reading id -> its item, while it may arrive
        self._handed: deque[tuple[float, int]] = deque()  # (hand-over time, reading id)
        self._requests: dict[tuple[int, int], int] = {}  # (producer, request id) -> reading id
        self._total = self.per_producer * len(net.ids("producer"))
        self._values = sim.rng("sensor")
        sink = net.node("client")
        self._server = CoapEndpoint(sim.rng("coap/server"), coap_params(cfg))
        self._server.add_resource(self.path, self._arrived, methods={codec.Code.PUT})
        DatagramDriver(sim, sink, self._server, _ignore, codec.header_length, COAP_PORT)
        self._sink = (address_text(net.address(sink)), COAP_PORT)
        self._producers = []
        for index, node in enumerate(net.nodes("producer")):
            endpoint = CoapEndpoint(
                sim.rng(f"coap/{node.name}"), coap_params(cfg), token_length=cfg["token_length"]
            )
            driver = DatagramDriver(sim, node, endpoint, self._on_event(index), codec.header_length)
            self._producers.append((endpoint, driver))
        self._options = [(codec.Opt.CONTENT_FORMAT, 50)]  # application/json
        if not self.confirmable:
            self._options.append((Opt.NO_RESPONSE, NO_RESPONSE_ALL))
        self._phases = sim.rng("workload/phases")
        self._last_publish = self.start_s

    def start(self) -> None:
        for index in range(len(self._producers)):
            first = self.start_s + self._phases.uniform(0.0, self.interval_s)
            self._last_publish = max(
                self._last_publish, first + (self.per_producer - 1) * self.interval_s
            )
            self.sim.at(first, self._publish, index, 0)
        self.sim.at(self._last_publish + self.drain_s, self.sim.stop)

    def _publish(self, producer: int, counter: int) -> None:
        sim = self.sim
        item = self.items.start(sim.now)
        rid = reading_id(producer, counter)
        self._open[rid] = item
        endpoint, driver = self._producers[producer]
        request = endpoint.request(
            sim.now,
            self._sink,
            codec.Code.PUT,
            self.path,
            confirmable=self.confirmable,
            payload=reading(producer, counter, self._values.randrange(10000)),
            options=self._options,
        )
        driver.pump()
        if self.confirmable:
            self._requests[(producer, request)] = rid
        else:
            item.t_handed_over = sim.now
            self._handed.append((sim.now, rid))
            self._expire(sim.now)
        if counter + 1 < self.per_producer:
            sim.schedule(self.interval_s, self._publish, producer, counter + 1)

    def _expire(self, now: float) -> None:
        """Give up the handed-over readings that have had `drain_s` to arrive."""
        handed = self._handed
        while handed and handed[0][0] + self.drain_s < now:
            t, rid = handed.popleft()
            item = self._open.pop(rid, None)
            if item is not None:
                self.items.finish(item, t, GIVEN_UP)

    def _arrived(self, request, addr) -> ResourceResponse:
        try:
            rid = int(json.loads(request.payload)["id"], 16)
        except (ValueError, KeyError, TypeError):
            return ResourceResponse(codec.Code.BAD_REQUEST)
        item = self._open.pop(rid, None)
        if item is not None:
            self.items.finish(item, self.sim.now, DELIVERED, len(request.payload))
            self._check_all_done()
        return ResourceResponse(codec.Code.CHANGED)

    def _on_event(self, producer: int):
        def on_event(event: object) -> None:
            if isinstance(event, RequestFailed):
                rid = self._requests.pop((producer, event.request_id), None)
                item = self._open.pop(rid, None) if rid is not None else None
                if item is not None:
                    self.items.finish(item, self.sim.now, GIVEN_UP)
                    self._check_all_done()
            else:
                self._requests.pop((producer, getattr(event, "request_id", None)), None)

        return on_event

    def _check_all_done(self) -> None:
        stats = self.items.stats
        if stats.delivered + stats.given_up == self._total:
            self.sim.stop()


def _ignore(event: object) -> None:
    pass
