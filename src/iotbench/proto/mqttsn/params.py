"""Parameters of the MQTT-SN client and gateway, with the reasons for their defaults.

The timer and counter values the specification recommends in its
implementation notes (section 7) are ranges; the defaults below are their
fastest ends, and every one is configurable (a scenario that follows a study
sets its own):

    Tretry 10-15 s, Nretry 3-5, Tsearchgw 5 s, Tgwinfo 5 s, Nadv 2-5,
    Tadv > 15 min, Twait > 5 min.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from iotbench.proto.paramcheck import check, is_int, is_seconds
from iotbench.proto.retransmit import BackoffSchedule

__all__ = [
    "MAX_CLIENT_ID_CHARS",
    "MAX_TOPIC_BYTES",
    "MqttSnClientParams",
    "MqttSnGatewayParams",
]

#: 5.3.1: a ClientId is 1 to 23 characters long.
MAX_CLIENT_ID_CHARS = 23
#: The longest topic name MQTT 3.1.1 can carry (1.5.3), in UTF-8 octets.
MAX_TOPIC_BYTES = 0xFFFF
GIVE_UP = ("disconnect", "request")


def _check_predefined(cls: str, topics: Mapping[int, str]) -> None:
    names = set()
    for topic_id, name in topics.items():
        check(
            cls,
            "predefined_topics",
            is_int(topic_id) and 1 <= topic_id <= 0xFFFE,
            "a mapping of topic ids 1..65534 (0x0000 and 0xFFFF are reserved, 5.3.11)",
            topic_id,
        )
        ok = isinstance(name, str) and bool(name) and "+" not in name and "#" not in name
        check(cls, "predefined_topics", ok, "non-empty topic names without wildcards", name)
        check(cls, "predefined_topics", name not in names, "one id per topic name", name)
        names.add(name)


@dataclass(frozen=True)
class _RetryParams:
    """Tretry and Nretry (6.13): the retry timer and the retransmissions before giving up."""

    retry_interval_s: float = 10.0
    max_retries: int = 3

    def _check_retry(self, cls: str) -> None:
        check(
            cls,
            "retry_interval_s",
            is_seconds(self.retry_interval_s),
            "> 0 seconds",
            self.retry_interval_s,
        )
        check(
            cls,
            "max_retries",
            is_int(self.max_retries) and self.max_retries >= 0,
            "an integer >= 0",
            self.max_retries,
        )

    def retry_schedule(self) -> BackoffSchedule:
        """A fixed Tretry for every transmission (6.13 knows no back-off), Nretry re-sends."""
        return BackoffSchedule(
            base_timeout_s=self.retry_interval_s,
            max_retransmissions=self.max_retries,
            backoff_factor=1.0,
        )


@dataclass(frozen=True)
class MqttSnClientParams(_RetryParams):
    """Settings of one MqttSnClient (see _RetryParams for Tretry/Nretry).

    - client_id: 1-23 characters (5.3.1); sent in CONNECT and in the PINGREQ
      that wakes a sleeping client.
    - clean_session: the CONNECT flag (6.3).
    - keep_alive_s: the CONNECT Duration, 0..65535; PINGREQ after this long
      without sending (6.11); 0 turns keep-alive off.
    - predefined_topics: topic id -> topic name known in advance (6.7); used
      to name received messages.
    - search_delay_s: Tsearchgw, the longest random delay before a SEARCHGW
      (6.1). search_retries: SEARCHGW re-sends before GatewaySearchFailed;
      the wait doubles after each, starting at search_delay_s.
    - gwinfo_delay_s: Tgwinfo, the longest random delay before this client
      answers another client's SEARCHGW (6.1).
    - gwinfo_broadcast_addr: where this client broadcasts such a GWINFO;
      None (default): it never answers other clients' searches.
    - advertise_misses: Nadv; a gateway is lost after this many ADVERTISE
      periods without one (6.1).
    - max_queued: requests waiting for the one outstanding slot or for the
      connection; publish() and the others raise QueueFull beyond it.
    - max_topics: topic ids the gateway may register with this client; a
      further REGISTER is answered with "rejected: congestion".
    - max_inflight: requests outstanding at once (1: the specification's one
      at a time; RIOT's asymcute, S4's client, has a request context for each
      of up to 128).
    - give_up: what Nretry unanswered re-sends of a request end:
      "disconnect", the connection (6.13: the client assumes it is no longer
      connected); "request", that request alone, which fails with "timeout"
      (what asymcute does).
    """

    client_id: str = "iotbench"
    clean_session: bool = True
    keep_alive_s: int = 60
    predefined_topics: Mapping[int, str] = field(default_factory=dict)
    search_delay_s: float = 5.0
    search_retries: int = 3
    gwinfo_delay_s: float = 5.0
    gwinfo_broadcast_addr: Hashable | None = None
    advertise_misses: int = 2
    max_queued: int = 100
    max_topics: int = 1000
    max_inflight: int = 1
    give_up: Literal["disconnect", "request"] = "disconnect"

    def __post_init__(self) -> None:
        cls = "MqttSnClientParams"
        self._check_retry(cls)
        cid = self.client_id
        check(
            cls,
            "client_id",
            isinstance(cid, str) and 1 <= len(cid) <= MAX_CLIENT_ID_CHARS and "\0" not in cid,
            f"1..{MAX_CLIENT_ID_CHARS} characters (5.3.1)",
            cid,
        )
        check(
            cls,
            "keep_alive_s",
            is_int(self.keep_alive_s) and 0 <= self.keep_alive_s <= 0xFFFF,
            "an integer in 0..65535",
            self.keep_alive_s,
        )
        _check_predefined(cls, self.predefined_topics)
        for name in ("search_delay_s", "gwinfo_delay_s"):
            check(cls, name, is_seconds(getattr(self, name)), "> 0 seconds", getattr(self, name))
        for name, low in (
            ("search_retries", 0),
            ("advertise_misses", 1),
            ("max_queued", 0),
            ("max_topics", 0),
            ("max_inflight", 1),
        ):
            value = getattr(self, name)
            check(cls, name, is_int(value) and value >= low, f"an integer >= {low}", value)
        check(
            cls,
            "give_up",
            self.give_up in GIVE_UP,
            f"one of {', '.join(GIVE_UP)}",
            self.give_up,
        )


@dataclass(frozen=True)
class MqttSnGatewayParams(_RetryParams):
    """Settings of one MqttSnGateway (see _RetryParams for Tretry/Nretry of what the
    gateway sends to clients: REGISTER, PUBLISH QoS 1/2, PUBREL).

    - gw_id: the GwId of ADVERTISE and GWINFO (5.3.6).
    - broadcast_addr: where ADVERTISE and GWINFO are broadcast; None: no
      ADVERTISE, and GWINFO is sent to the searching client only.
    - advertise_interval_s: Tadv, the ADVERTISE period and its Duration
      field (1..65535 s); None (default) sends none.
    - predefined_topics: topic id -> topic name (6.7), shared with clients
      out of band; also the topics of QoS -1 publishes (6.8).
    - keep_alive_factor: a client is lost after keep-alive (or sleep
      duration) x this factor of silence (6.11, 6.14).
    - idle_timeout_s: an active client whose keep-alive is 0 (no keep-alive,
      as MQTT 3.1.1 reads it, 3.1.2.10) is lost after this long without a
      message from it, as after a keep-alive timeout; None (default): never.
      Without it a CONNECT with Duration 0 from a spoofed address holds a
      slot and a broker connection for ever.
    - connect_timeout_s: a client that started CONNECT and neither finished
      the will exchange nor got a CONNACK within this time is dropped.
    - max_clients: clients with state at the gateway (connecting, active,
      asleep, awake); one more is refused with "rejected: congestion".
    - max_new_clients: the share of the table for new clients, those still
      connecting or not heard from since their CONNACK (a CONNECT may come
      from a spoofed address, whose owner never sees the CONNACK and sends
      nothing more). A CONNECT that finds this many, or a full table, ends
      the oldest new client (CONNACK "rejected: congestion" if it is still
      connecting, DISCONNECT if not) and takes its place; with no new client
      to end it is refused with "rejected: congestion". None (default): no
      share, a full table refuses.
    - max_buffered_messages: messages queued for one client (while it
      sleeps, or waiting for the one outstanding QoS 1/2 PUBLISH); further
      messages for it are dropped and counted.
    - max_topics_per_client: topic ids registered per client; REGISTER
      beyond it is refused with "rejected: congestion".
    - max_topic_name_bytes: the longest topic name (UTF-8 octets) a client
      may REGISTER, SUBSCRIBE to (a filter too) or give as its will topic;
      a longer one is refused with "rejected: not supported". Default:
      65535, all MQTT can carry (1.5.3).
    - max_topic_bytes_per_client: octets of topic names one client's topic
      table may hold (its REGISTERs, SUBSCRIBEs and the gateway's own
      REGISTERs together); REGISTER beyond it is refused with "rejected:
      congestion", like beyond max_topics_per_client.
    - max_stored_wills: wills kept for disconnected CleanSession=0 clients
      (6.3); the oldest is forgotten beyond it.
    - broker_keep_alive_s: keep-alive of each MQTT connection to the broker
      (independent of the MQTT-SN client's, which may be asleep for longer).
    - qos_minus_one_client_id: the MQTT client id of the gateway's own
      connection that carries QoS -1 publishes (6.8); "" names it
      "mqttsn-gw-<gw_id>".
    """

    gw_id: int = 1
    broadcast_addr: Hashable | None = None
    advertise_interval_s: int | None = None
    predefined_topics: Mapping[int, str] = field(default_factory=dict)
    keep_alive_factor: float = 1.5
    idle_timeout_s: float | None = None
    connect_timeout_s: float = 60.0
    max_clients: int = 1000
    max_new_clients: int | None = None
    max_buffered_messages: int = 100
    max_topics_per_client: int = 1000
    max_topic_name_bytes: int = MAX_TOPIC_BYTES
    max_topic_bytes_per_client: int = 0x10000
    max_stored_wills: int = 1000
    broker_keep_alive_s: int = 60
    qos_minus_one_client_id: str = ""

    def __post_init__(self) -> None:
        cls = "MqttSnGatewayParams"
        self._check_retry(cls)
        check(cls, "gw_id", is_int(self.gw_id) and 0 <= self.gw_id <= 0xFF, "0..255", self.gw_id)
        adv = self.advertise_interval_s
        check(
            cls,
            "advertise_interval_s",
            adv is None or (is_int(adv) and 1 <= adv <= 0xFFFF),
            "None or an integer in 1..65535 (the ADVERTISE Duration field)",
            adv,
        )
        check(
            cls,
            "broadcast_addr",
            adv is None or self.broadcast_addr is not None,
            "set when advertise_interval_s is",
            self.broadcast_addr,
        )
        _check_predefined(cls, self.predefined_topics)
        check(
            cls,
            "keep_alive_factor",
            is_seconds(self.keep_alive_factor) and self.keep_alive_factor >= 1.0,
            ">= 1.0",
            self.keep_alive_factor,
        )
        idle = self.idle_timeout_s
        check(cls, "idle_timeout_s", idle is None or is_seconds(idle), "None or > 0 s", idle)
        check(
            cls,
            "connect_timeout_s",
            is_seconds(self.connect_timeout_s),
            "> 0 seconds",
            self.connect_timeout_s,
        )
        for name in (
            "max_clients",
            "max_buffered_messages",
            "max_topics_per_client",
            "max_topic_bytes_per_client",
            "max_stored_wills",
        ):
            value = getattr(self, name)
            check(cls, name, is_int(value) and value >= 0, "an integer >= 0", value)
        new = self.max_new_clients
        check(
            cls,
            "max_new_clients",
            new is None or (is_int(new) and new >= 1),
            "None or an integer >= 1",
            new,
        )
        check(
            cls,
            "max_topic_name_bytes",
            is_int(self.max_topic_name_bytes) and 1 <= self.max_topic_name_bytes <= MAX_TOPIC_BYTES,
            f"an integer in 1..{MAX_TOPIC_BYTES}",
            self.max_topic_name_bytes,
        )
        check(
            cls,
            "broker_keep_alive_s",
            is_int(self.broker_keep_alive_s) and 0 <= self.broker_keep_alive_s <= 0xFFFF,
            "an integer in 0..65535",
            self.broker_keep_alive_s,
        )

    @property
    def qos_minus_one_mqtt_client_id(self) -> str:
        return self.qos_minus_one_client_id or f"mqttsn-gw-{self.gw_id}"
