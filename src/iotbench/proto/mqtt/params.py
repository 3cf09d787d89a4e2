"""Parameters of the MQTT client and broker, with the reasons for their defaults.

MQTT 3.1.1 fixes few numbers (keep-alive is the client's choice, the broker
closes after 1.5 x keep-alive of silence); the rest are implementation
choices, documented here and in docs/mqtt.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from iotbench.proto.paramcheck import check, is_int, is_seconds
from iotbench.proto.retransmit import BackoffSchedule

from .acl import Acl
from .auth import Passwords
from .codec import MAX_PACKET_SIZE_BYTES, Will

__all__ = ["MqttBrokerParams", "MqttClientParams"]

#: What a broker accepts by default: a peer must not make it buffer 256 MiB.
DEFAULT_BROKER_MAX_PACKET_SIZE_BYTES = 1 << 20
#: Packet identifiers are 16 bits, so queued plus in-flight messages of one
#: session must fit in 65535 ids (the client also needs a few for SUBSCRIBE).
_MAX_IDS = 65535


def _check_max_packet_size(cls: str, size: object) -> None:
    """The smallest packet is 2 bytes; the largest the remaining-length field allows."""
    ok = is_int(size) and 2 <= size <= MAX_PACKET_SIZE_BYTES
    check(cls, "max_packet_size_bytes", ok, f"an integer in 2..{MAX_PACKET_SIZE_BYTES}", size)


@dataclass(frozen=True)
class _FlowParams:
    """Outgoing QoS 1/2 flow settings shared by client and broker.

    - max_inflight: QoS 1/2 PUBLISHes sent but not completely acknowledged;
      more wait in a FIFO queue (QoS 0 messages queue behind them so the
      order of messages is kept).
    - max_queued_messages: messages waiting beyond the in-flight window (and,
      on the broker, for an offline persistent session); beyond it the client
      refuses publish() and the broker drops the message (counted).
    - retry_interval_s: None (default): an unacknowledged PUBLISH or PUBREL
      is re-sent (DUP=1) only on reconnection with a persistent session, as
      3.1.1 section 4.4 requires; TCP already delivers what it accepted. A
      number: also re-send over the same connection when no acknowledgement
      came within this time (as MQTT 3.1 implementations did), following a
      retransmit.BackoffSchedule with retry_backoff_factor and at most
      retry_max_retransmissions re-sends per connection; after that the
      message waits for the next connection.
    """

    max_inflight: int = 20
    max_queued_messages: int = 1000
    retry_interval_s: float | None = None
    retry_backoff_factor: float = 1.0
    retry_max_retransmissions: int = 10

    def _check_flow(self, cls: str) -> None:
        check(
            cls,
            "max_inflight",
            is_int(self.max_inflight) and 1 <= self.max_inflight,
            "an integer >= 1",
            self.max_inflight,
        )
        check(
            cls,
            "max_queued_messages",
            is_int(self.max_queued_messages) and 0 <= self.max_queued_messages,
            "an integer >= 0",
            self.max_queued_messages,
        )
        check(
            cls,
            "max_inflight + max_queued_messages",
            self.max_inflight + self.max_queued_messages <= _MAX_IDS - 100,
            f"at most {_MAX_IDS - 100} (16-bit packet identifiers)",
            self.max_inflight + self.max_queued_messages,
        )
        check(
            cls,
            "retry_interval_s",
            self.retry_interval_s is None or is_seconds(self.retry_interval_s),
            "> 0 seconds or None",
            self.retry_interval_s,
        )
        check(
            cls,
            "retry_backoff_factor",
            is_seconds(self.retry_backoff_factor) and self.retry_backoff_factor >= 1.0,
            ">= 1.0",
            self.retry_backoff_factor,
        )
        check(
            cls,
            "retry_max_retransmissions",
            is_int(self.retry_max_retransmissions) and self.retry_max_retransmissions >= 0,
            "an integer >= 0",
            self.retry_max_retransmissions,
        )

    def retry_schedule(self) -> BackoffSchedule | None:
        """The timing of re-sends over one connection, or None when they are off."""
        if self.retry_interval_s is None:
            return None
        return BackoffSchedule(
            base_timeout_s=self.retry_interval_s,
            max_retransmissions=self.retry_max_retransmissions,
            backoff_factor=self.retry_backoff_factor,
        )


@dataclass(frozen=True)
class MqttClientParams(_FlowParams):
    """Settings of one MqttClient (see _FlowParams for the QoS flow settings).

    - client_id: "" lets the broker assign one, allowed only with
      clean_session (3.1.3.1); a broker answers 0x02 otherwise, which is
      left to it so that the refusal can be studied.
    - clean_session: True discards the session at every connect (3.1.2.4);
      False resumes it, re-sending unacknowledged messages.
    - keep_alive_s: 0..65535; 0 turns keep-alive off. The client sends
      PINGREQ after keep_alive_s without sending anything (3.1.2.10).
    - ping_timeout_s: how long to wait for PINGRESP before closing the
      connection; None: keep_alive_s (as libmosquitto and paho do), or no
      limit when keep-alive is off.
    - connack_timeout_s: how long to wait for CONNACK before closing; None:
      keep_alive_s, or no limit when keep-alive is off.
    - will, username, password: sent in CONNECT.
    - max_packet_size_bytes: a larger incoming packet closes the connection;
      default: the protocol's maximum (the client chose its broker).
    """

    client_id: str = ""
    clean_session: bool = True
    keep_alive_s: int = 60
    ping_timeout_s: float | None = None
    connack_timeout_s: float | None = None
    will: Will | None = None
    username: str | None = None
    password: bytes | None = None
    max_packet_size_bytes: int = MAX_PACKET_SIZE_BYTES

    def __post_init__(self) -> None:
        cls = "MqttClientParams"
        self._check_flow(cls)
        check(
            cls,
            "keep_alive_s",
            is_int(self.keep_alive_s) and 0 <= self.keep_alive_s <= 0xFFFF,
            "an integer in 0..65535",
            self.keep_alive_s,
        )
        for name in ("ping_timeout_s", "connack_timeout_s"):
            value = getattr(self, name)
            check(cls, name, value is None or is_seconds(value), "> 0 seconds or None", value)
        _check_max_packet_size(cls, self.max_packet_size_bytes)
        check(
            cls,
            "password",
            self.password is None or self.username is not None,
            "None when there is no username (3.1.2.9)",
            self.password,
        )

    @property
    def ping_timeout(self) -> float | None:
        if self.ping_timeout_s is not None:
            return self.ping_timeout_s
        return self.keep_alive_s or None

    @property
    def connack_timeout(self) -> float | None:
        if self.connack_timeout_s is not None:
            return self.connack_timeout_s
        return self.keep_alive_s or None


@dataclass(frozen=True)
class MqttBrokerParams(_FlowParams):
    """Settings of one MqttBroker (see _FlowParams for the outgoing QoS flows per session).

    - max_packet_size_bytes: a larger incoming packet closes that connection
      (1 MiB by default: what one peer can make the broker buffer).
    - connect_timeout_s: a connection that sends no CONNECT within this time
      is closed (3.1.4 asks for "a reasonable amount of time"); None: never.
      60 s leaves room for a CONNECT delayed by several TCP retransmissions
      on a slow, lossy link, and still frees connections that never speak.
    - max_qos: the highest QoS granted to subscriptions (3.8.4).
    - max_sessions: sessions (online and stored offline); a CONNECT that
      would create one more is refused with 0x03 "server unavailable".
    - max_subscriptions_per_session: further filters get SUBACK 0x80.
    - max_retained_messages: retained messages on new topics beyond this are
      not stored (replacing or deleting existing ones always works).
    - users: None (default) checks no credentials; a `Passwords` (a parsed
      password file) or a mapping of user name to plain password refuses
      wrong credentials with 0x04 (auth.py).
    - allow_anonymous: whether a client without a user name may connect
      (refused with 0x05 otherwise); None (default): only when there is no
      `users`, as mosquitto 2.0 does. (False without `users` admits any
      client that gives a user name, unchecked.)
    - acl: None (default) lets any client publish and subscribe to any topic;
      an `Acl` (a parsed ACL file) denies what it does not grant (acl.py).
    """

    max_packet_size_bytes: int = DEFAULT_BROKER_MAX_PACKET_SIZE_BYTES
    connect_timeout_s: float | None = 60.0
    max_qos: int = 2
    max_sessions: int = 100_000
    max_subscriptions_per_session: int = 1000
    max_retained_messages: int = 100_000
    users: Passwords | Mapping[str, bytes] | None = None
    allow_anonymous: bool | None = None
    acl: Acl | None = None

    def __post_init__(self) -> None:
        cls = "MqttBrokerParams"
        if isinstance(self.users, Mapping):
            ok = all(isinstance(k, str) and isinstance(v, bytes) for k, v in self.users.items())
            check(cls, "users", ok, "a mapping of str user names to bytes passwords", self.users)
            object.__setattr__(self, "users", Passwords(self.users))  # one form for the broker
        check(
            cls,
            "users",
            self.users is None or isinstance(self.users, Passwords),
            "None, Passwords or a mapping",
            self.users,
        )
        check(
            cls,
            "allow_anonymous",
            self.allow_anonymous is None or isinstance(self.allow_anonymous, bool),
            "None, True or False",
            self.allow_anonymous,
        )
        check(cls, "acl", self.acl is None or isinstance(self.acl, Acl), "None or an Acl", self.acl)
        self._check_flow(cls)
        _check_max_packet_size(cls, self.max_packet_size_bytes)
        check(
            cls,
            "connect_timeout_s",
            self.connect_timeout_s is None or is_seconds(self.connect_timeout_s),
            "> 0 seconds or None",
            self.connect_timeout_s,
        )
        check(cls, "max_qos", self.max_qos in (0, 1, 2), "0, 1 or 2", self.max_qos)
        for name in ("max_sessions", "max_subscriptions_per_session", "max_retained_messages"):
            value = getattr(self, name)
            check(cls, name, is_int(value) and value >= 0, "an integer >= 0", value)

    @property
    def passwords(self) -> Passwords | None:
        """`users` as the broker checks it: __post_init__ made a mapping a Passwords."""
        users = self.users
        assert users is None or isinstance(users, Passwords)  # see __post_init__
        return users

    @property
    def anonymous_allowed(self) -> bool:
        """Whether a client without a user name may connect."""
        if self.allow_anonymous is None:
            return self.users is None
        return self.allow_anonymous
