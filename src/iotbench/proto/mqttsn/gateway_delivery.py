"""The MQTT-SN gateway's delivery layer: the broker's messages on their way to a
client, and their retransmission (MQTT-SN 1.2 6.5-6.7, 6.13, 6.14).

`ClientDelivery` queues what the broker delivers for a client (at most
max_buffered_messages; more are dropped and counted, the broker already got its
acknowledgement) and sends it while the client is active or awake: one REGISTER
or QoS 1/2 PUBLISH outstanding at a time, in the order the broker delivered
them, a REGISTER first for a topic the client does not know. What waits for the
client's answer is re-sent after Tretry (PUBLISH with DUP=1), at most Nretry
times; then `retransmit` says the client is lost. Its per-client state is the
session's `ToClient`.

The session table above it decides when a client may receive (`pump` on a
wake-up, `suspend` on going to sleep) and is told, through the `all_delivered`
callback it gives, when an awake client has had everything (6.14: PINGRESP
sends it back to sleep).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

from iotbench.proto.mqtt.events import MessageReceived
from iotbench.proto.retransmit import Retransmission

from .codec import (
    Message,
    PubAck,
    PubComp,
    Publish,
    PubRec,
    PubRel,
    RegAck,
    Register,
    ReturnCode,
)
from .gateway_datagrams import ClientDatagrams
from .gateway_state import (
    ACTIVE,
    AWAKE,
    ClientSession,
    Delivery,
    MqttSnGatewayStats,
    Outgoing,
)
from .gateway_topics import TopicIds
from .params import MqttSnGatewayParams

#: What the gateway sends a client and waits for an answer to.
_Awaited = TypeVar("_Awaited", Register, Publish, PubRel)


class ClientDelivery:
    """The broker's messages to clients: queued, sent one at a time, retransmitted."""

    def __init__(
        self,
        rng: random.Random,
        params: MqttSnGatewayParams,
        stats: MqttSnGatewayStats,
        datagrams: ClientDatagrams,
        topics: TopicIds,
        all_delivered: Callable[[float, ClientSession], None],
    ) -> None:
        self._rng = rng  # for the retransmissions' jitter
        self._schedule = params.retry_schedule()
        self._max_buffered = params.max_buffered_messages
        self._stats = stats
        self._datagrams = datagrams
        self._topics = topics
        self._all_delivered = all_delivered  # an awake client has had everything

    # =====================================================================
    # for the session table
    # =====================================================================

    def waiting(self, c: ClientSession) -> int:
        """Messages waiting for `c` (not counting one outstanding)."""
        return len(c.to_client.queue)

    def deadline(self, c: ClientSession) -> float | None:
        """When the message outstanding for `c` is to be re-sent, if any."""
        out = c.to_client.out
        return out.retx.deadline_s if out is not None else None

    def retransmit(self, now: float, c: ClientSession) -> bool:
        """Re-send the outstanding message if its time has come; False when Nretry
        re-sends went unanswered (the client is lost)."""
        out = c.to_client.out
        if out is None or out.retx.deadline_s > now:
            return True
        if not out.retx.on_timeout(now):
            return False
        self._stats.retransmissions += 1
        if type(out.message) is Publish and not out.message.dup:
            out.message = replace(out.message, dup=True)
        self._datagrams.send(out.message, c.addr)
        return True

    def suspend(self, c: ClientSession) -> None:
        """Going to sleep: stop re-sending; an unacknowledged PUBLISH waits for the wake-up."""
        to_client = c.to_client
        out = to_client.out
        to_client.out = None
        if out is not None and out.delivery is not None and type(out.message) is Publish:
            to_client.queue.appendleft(out.delivery)

    def pump(self, now: float, c: ClientSession) -> None:
        """Send waiting messages, one REGISTER or QoS 1/2 PUBLISH outstanding at a time."""
        to_client = c.to_client
        queue = to_client.queue
        while c.state in (ACTIVE, AWAKE) and to_client.out is None and queue:
            d = queue[0]
            topic = self._topics.to_client(c, d.topic)
            if topic is None:
                topic_id = self._topics.assign(c, d.topic)
                if topic_id is None:
                    queue.popleft()
                    self._stats.dropped_buffer_full += 1  # no topic id left for this client
                    continue
                self._transmit(now, c, Register(topic_id, to_client.new_msg_id(), d.topic))
                break
            queue.popleft()
            kind, topic_id = topic
            msg_id = to_client.new_msg_id() if d.qos else 0
            message = Publish(topic_id, msg_id, d.payload, d.qos, d.retain, False, kind)
            self._stats.messages_to_clients += 1
            if d.qos:
                self._transmit(now, c, message, d)
            else:
                self._datagrams.send(message, c.addr)
        if c.state == AWAKE and to_client.out is None and not queue:
            self._all_delivered(now, c)

    # =====================================================================
    # from the broker
    # =====================================================================

    def deliver(self, now: float, c: ClientSession, event: MessageReceived) -> None:
        """A message the broker delivered on the client's MQTT connection."""
        queue = c.to_client.queue
        if len(queue) >= self._max_buffered:
            self._stats.dropped_buffer_full += 1
            return
        queue.append(Delivery(event.topic, event.payload, event.qos, event.retain))
        self.pump(now, c)

    # =====================================================================
    # the client's answers
    # =====================================================================

    def on_regack(self, now: float, c: ClientSession, m: RegAck) -> None:
        register = self._awaited(c, Register, m.msg_id)
        if register is None:
            return
        if m.return_code == ReturnCode.ACCEPTED:
            self._topics.registered(c, register.topic_id)
        else:
            self._topics.registration_refused(c, register.topic_id)
            if c.to_client.queue:
                c.to_client.queue.popleft()  # the message that needed the topic cannot go
            self._stats.dropped_rejected += 1
        self._done(now, c)

    def on_puback(self, now: float, c: ClientSession, m: PubAck) -> None:
        publish = self._awaited(c, Publish, m.msg_id)
        if publish is None:
            return
        if m.return_code != ReturnCode.ACCEPTED:
            self._stats.dropped_rejected += 1
            if m.return_code == ReturnCode.INVALID_TOPIC_ID:
                self._topics.unknown_to_client(c, m.topic_id)
        elif publish.qos != 1:
            self._stats.unexpected += 1
            return
        self._done(now, c)

    def on_pubrec(self, now: float, c: ClientSession, m: PubRec) -> None:
        out = c.to_client.out
        if out is not None and type(out.message) is PubRel and out.message.msg_id == m.msg_id:
            self._datagrams.send(out.message, c.addr)  # our PUBREL was lost
            return
        publish = self._awaited(c, Publish, m.msg_id)
        if publish is None or publish.qos != 2:
            return
        self._transmit(now, c, PubRel(m.msg_id))

    def on_pubcomp(self, now: float, c: ClientSession, m: PubComp) -> None:
        if self._awaited(c, PubRel, m.msg_id) is not None:
            self._done(now, c)

    # ---- inside ----------------------------------------------------------------------------

    def _transmit(
        self, now: float, c: ClientSession, message: Message, delivery: Delivery | None = None
    ) -> None:
        """Send a message that waits for the client's reply, under Tretry/Nretry."""
        retx = Retransmission(self._schedule, self._rng)
        retx.start(now)
        c.to_client.out = Outgoing(message, retx, delivery)
        self._datagrams.send(message, c.addr)

    def _awaited(self, c: ClientSession, kind: type[_Awaited], msg_id: int) -> _Awaited | None:
        """The outstanding message an answer of the client's is for: of type `kind`
        with this MsgId; None (counted as unexpected) when there is none."""
        out = c.to_client.out
        if out is None or type(out.message) is not kind or out.message.msg_id != msg_id:
            self._stats.unexpected += 1
            return None
        return out.message

    def _done(self, now: float, c: ClientSession) -> None:
        c.to_client.out = None
        self.pump(now, c)
