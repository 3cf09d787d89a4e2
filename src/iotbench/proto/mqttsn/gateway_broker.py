"""The MQTT-SN gateway's bottom layer on the broker's side: its MQTT connections.

`BrokerLinks` keeps every MQTT connection to the broker (a `BrokerLink`: the
stream a driver carries and the MqttClient on it): one per client, opened for
its session, and the gateway's own, for QoS -1 publishes (6.8), opened on
first use. It turns the driver's stream calls into the MqttClients' inputs and
their bytes into stream output, and it knows nothing of MQTT-SN.

To the driver (through MqttSnGateway): `connected`, `receive`, `lost`, and the
drains `streams_to_open`, `stream_data_to_send`, `streams_to_close`.

To the layers above:

    link = links.open(session, client_id, clean_session, will)
    pid = links.publish(now, link, topic, payload, qos, retain)   # also subscribe, unsubscribe
    links.end(now, link)       # DISCONNECT, then close: the broker drops the will
    links.cut(link)            # close without DISCONNECT: the broker publishes the will
    links.release(link)        # its session is gone; the link closes when its MqttClient says

A link's owner (its ClientSession) hears `link_detached(link)` when the layer
is done with the link. Every call that may give an MqttClient something to
say marks its link touched; MqttSnGateway then takes each touched link's
events (`next_touched`, `take_events`) and lets it `settle` (its bytes out,
closed if its MqttClient asked).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from iotbench.proto.mqtt.client import MqttClient
from iotbench.proto.mqtt.codec import Will
from iotbench.proto.mqtt.events import ClientEvent, ConnectionClosed
from iotbench.proto.mqtt.params import MqttClientParams

from .gateway_state import BrokerLink, ClientSession, MqttSnGatewayStats
from .params import MqttSnGatewayParams


class BrokerLinks:
    """The gateway's MQTT connections to the broker, as streams for the driver."""

    def __init__(
        self,
        rng: random.Random,
        params: MqttSnGatewayParams,
        stats: MqttSnGatewayStats,
        guard: Callable[[Exception], None],
    ) -> None:
        self._rng = rng  # for the MqttClients (their first Packet Identifier)
        self._params = params
        self._stats = stats
        self._guard = guard  # counts, and raises or logs, an exception of our own
        self._links: dict[int, BrokerLink] = {}
        self._next_stream = 1
        self._own: BrokerLink | None = None  # the gateway's own connection (QoS -1)
        self._to_open: list[int] = []
        self._stream_out: dict[int, bytearray] = {}
        self._to_close: list[int] = []
        self._touched: dict[int, BrokerLink] = {}  # links whose MqttClient may have output

    # =====================================================================
    # the driver's side
    # =====================================================================

    def streams_to_open(self) -> list[int]:
        """New broker connections to open (drains)."""
        out = self._to_open
        self._to_open = []
        return out

    def stream_data_to_send(self) -> list[tuple[int, bytes]]:
        """(stream, bytes) to write to the broker, one entry per stream (drains)."""
        out = [(stream, bytes(buf)) for stream, buf in self._stream_out.items() if buf]
        self._stream_out.clear()
        return out

    def streams_to_close(self) -> list[int]:
        """Streams to close once their data is written (drains)."""
        out = self._to_close
        self._to_close = []
        return out

    @property
    def streams(self) -> list[int]:
        """The streams of the connections the gateway holds, in the order opened."""
        return list(self._links)

    def connected(self, now: float, stream: int) -> None:
        """`stream` is open: its MqttClient sends CONNECT."""
        link = self._links.get(stream)
        if link is not None and not link.mqtt.connected and not link.mqtt.close_requested:
            try:
                link.mqtt.connect(now)
            except RuntimeError as exc:  # the driver reported the connection twice
                self._guard(exc)
            self.touch(link)

    def receive(self, now: float, stream: int, data: bytes) -> None:
        """Bytes from the broker on `stream` (the MqttClient never raises)."""
        link = self._links.get(stream)
        if link is not None:
            link.mqtt.receive_data(now, data)
            self.touch(link)

    def lost(self, now: float, stream: int) -> ClientSession | None:
        """`stream` failed to open, was closed by the broker, or broke. Returns the
        session whose connection never opened (its link is gone; the MqttClient has
        no news for it), or None."""
        link = self._links.get(stream)
        if link is None:
            return None
        link.mqtt.connection_lost(now)
        if link.mqtt.close_requested:
            self.touch(link)  # ConnectionClosed: among its events
            return None
        owner = link.owner
        self._detach(link)
        if owner is None:
            self._stats.dropped_qos_minus_one += link.mqtt.queued
        return owner

    # =====================================================================
    # the layers above
    # =====================================================================

    def open(
        self, owner: ClientSession, client_id: str, clean_session: bool, will: Will | None
    ) -> BrokerLink:
        """A new MQTT connection for a client's session, carrying its will."""
        params = MqttClientParams(
            client_id=client_id,
            clean_session=clean_session,
            keep_alive_s=self._params.broker_keep_alive_s,
            will=will,
        )
        return self._open(owner, params)

    def own_link(self) -> BrokerLink:
        """The gateway's own connection (QoS -1), opened on first use."""
        link = self._own
        if link is None:
            params = MqttClientParams(
                client_id=self._params.qos_minus_one_mqtt_client_id,
                keep_alive_s=self._params.broker_keep_alive_s,
            )
            link = self._own = self._open(None, params)
        return link

    def publish(
        self, now: float, link: BrokerLink, topic: str, payload: bytes, qos: int, retain: bool
    ) -> int | None:
        """MqttClient.publish on `link` (QueueFull, ValueError as it raises them)."""
        pid = link.mqtt.publish(now, topic, payload, qos, retain)
        self.touch(link)
        return pid

    def publish_will(self, now: float, link: BrokerLink, will: Will) -> None:
        """Publish `will` on `link` if it is connected (end() it next)."""
        if link.mqtt.connected:
            link.mqtt.publish(now, will.topic, will.payload, will.qos, will.retain)

    def subscribe(self, now: float, link: BrokerLink, topic_filter: str, qos: int) -> int:
        """MqttClient.subscribe on `link` (QueueFull as it raises it)."""
        pid = link.mqtt.subscribe(now, [(topic_filter, qos)])
        self.touch(link)
        return pid

    def unsubscribe(self, now: float, link: BrokerLink, topic_filter: str) -> int:
        """MqttClient.unsubscribe on `link` (QueueFull as it raises it)."""
        pid = link.mqtt.unsubscribe(now, [topic_filter])
        self.touch(link)
        return pid

    def next_timer(self, link: BrokerLink) -> float | None:
        return link.mqtt.next_timer()

    def run_timer(self, now: float, link: BrokerLink) -> None:
        """Run `link`'s MqttClient's timers if one is due."""
        t = link.mqtt.next_timer()
        if t is not None and t <= now:
            link.mqtt.handle_timer(now)
            self.touch(link)

    def own_next_timer(self) -> float | None:
        return self._own.mqtt.next_timer() if self._own is not None else None

    def run_own_timer(self, now: float) -> None:
        if self._own is not None:
            self.run_timer(now, self._own)

    def end(self, now: float, link: BrokerLink) -> None:
        """End the MQTT connection with DISCONNECT (the broker drops the will)."""
        link.mqtt.disconnect(now)
        if link.mqtt.close_requested:
            self._flush(link)
            self._detach(link)
            self._to_close.append(link.stream)
        else:
            self.cut(link)  # never connected: nothing to say

    def cut(self, link: BrokerLink) -> None:
        """Close the MQTT connection without DISCONNECT (the broker publishes the will)."""
        self._flush(link)
        self._detach(link)
        self._to_close.append(link.stream)

    def release(self, link: BrokerLink) -> None:
        """Its session is gone: `link`'s events are nobody's now. It closes when its
        MqttClient asks to (refused, or closed by the broker)."""
        link.owner = None

    # ---- servicing touched links -------------------------------------------------------

    def touch(self, link: BrokerLink) -> None:
        self._touched[link.stream] = link

    def next_touched(self) -> BrokerLink | None:
        """The link touched first and not yet serviced, if any (taken off the list)."""
        touched = self._touched
        while touched:
            link = touched.pop(next(iter(touched)))
            if self._links.get(link.stream) is link:
                return link
        return None

    def take_events(self, link: BrokerLink) -> list[ClientEvent]:
        """`link`'s bytes out, then its MqttClient's events (drains)."""
        self._flush(link)
        events = link.mqtt.events()
        if link is self._own and any(type(e) is ConnectionClosed for e in events):
            self._own = None  # reopened on next use; settle() closes this one
        return events

    def settle(self, link: BrokerLink) -> None:
        """After `link`'s events: its bytes out, and closed if its MqttClient asked."""
        self._flush(link)
        if link.mqtt.close_requested and self._links.get(link.stream) is link:
            self._detach(link)
            self._to_close.append(link.stream)

    # ---- inside ----------------------------------------------------------------------------

    def _open(self, owner: ClientSession | None, params: MqttClientParams) -> BrokerLink:
        stream = self._next_stream
        self._next_stream += 1
        link = BrokerLink(stream, MqttClient(self._rng, params), owner)
        self._links[stream] = link
        self._to_open.append(stream)
        return link

    def _flush(self, link: BrokerLink) -> None:
        data = link.mqtt.data_to_send()
        if data:
            self._stream_out.setdefault(link.stream, bytearray()).extend(data)

    def _detach(self, link: BrokerLink) -> None:
        """Done with `link`: later bytes and losses for it are ignored."""
        self._links.pop(link.stream, None)
        self._touched.pop(link.stream, None)
        if self._own is link:
            self._own = None
        owner = link.owner
        link.owner = None
        if owner is not None:
            owner.link_detached(link)
