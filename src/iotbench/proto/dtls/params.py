"""DTLS settings and credentials, with the RFCs' defaults and where each comes from."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from iotbench.proto.retransmit import BackoffSchedule

#: The largest datagram a real-socket DTLS endpoint sends: 1,280-byte IPv6
#: minimum MTU less the IPv6 (40) and UDP (8) headers (RFC 6347 4.1.1.1 asks
#: records to fit the PMTU; RFC 7252 4.6 asks the same of CoAP).
IPV6_DATAGRAM_BYTES = 1280 - 40 - 8


@dataclass(frozen=True, slots=True)
class DtlsParams:
    """How a DTLS endpoint times, sizes and bounds its handshakes."""

    #: RFC 6347 4.2.4.1: 1 s initial timer, doubled per retransmission up to
    #: 60 s. RFC 7925 11 suggests constrained nodes tune these to their link.
    initial_timeout_s: float = 1.0
    max_timeout_s: float = 60.0
    #: Flights retransmitted before the handshake is given up. RFC 6347 leaves
    #: the number open; 7 is tinydtls's DTLS_DEFAULT_MAX_RETRANSMIT, the DTLS
    #: of RIOT and Contiki nodes.
    max_retransmissions: int = 7
    #: Largest datagram sent; handshake messages are fragmented to fit
    #: (RFC 6347 4.2.3), several records share a datagram when they fit.
    max_datagram_bytes: int = IPV6_DATAGRAM_BYTES
    #: RFC 7627: offer (client) and accept (server) the extended master secret.
    extended_master_secret: bool = True
    #: RFC 6347 4.1.2.6: the receive window, 64 as the RFC's example.
    replay_window: int = 64
    #: Established sessions kept at most. A handshake that completes when
    #: they are all taken closes the least recently active one (close_notify):
    #: only a peer that proved the key can push a session out (layer.py).
    max_sessions: int = 256
    #: Handshakes in progress kept at most, apart from the sessions: a new
    #: one when they are all taken ends the oldest started. The cookie
    #: (RFC 6347 4.2.1) proves an address, not a key, so these are
    #: unauthenticated and never push out an established session. 100 is
    #: libcoap's COAP_DEFAULT_MAX_HANDSHAKE_SESSIONS.
    max_handshakes: int = 100
    #: A client holds at most this many datagrams per peer while the
    #: handshake runs (the oldest goes first; CoAP retransmits anyway).
    max_queued: int = 16

    def __post_init__(self) -> None:
        if not 0 < self.initial_timeout_s <= self.max_timeout_s:
            raise ValueError("need 0 < initial_timeout_s <= max_timeout_s")
        if self.max_retransmissions < 0:
            raise ValueError(f"max_retransmissions must be >= 0, got {self.max_retransmissions}")
        # A record header, a handshake header and an encrypted Finished fit.
        if self.max_datagram_bytes < 64:
            raise ValueError(f"max_datagram_bytes must be >= 64, got {self.max_datagram_bytes}")
        for name in ("max_sessions", "max_handshakes", "max_queued", "replay_window"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")

    @property
    def schedule(self) -> BackoffSchedule:
        return BackoffSchedule(
            base_timeout_s=self.initial_timeout_s,
            max_retransmissions=self.max_retransmissions,
            backoff_factor=2.0,
            max_backoff_s=self.max_timeout_s,
        )


@dataclass(frozen=True, slots=True)
class PskClientCredentials:
    """What a client proves itself with (RFC 4279 2)."""

    identity: bytes
    key: bytes

    def __post_init__(self) -> None:
        _check_psk(self.identity, self.key)


@dataclass(frozen=True)
class PskServerCredentials:
    """The identities a server knows, and an optional hint it sends (RFC 4279 2, 5.2)."""

    keys: Mapping[bytes, bytes] = field(default_factory=dict)
    hint: bytes | None = None
    #: For keys kept elsewhere: identity -> key or None; used when given.
    lookup: Callable[[bytes], bytes | None] | None = None

    def __post_init__(self) -> None:
        for identity, key in self.keys.items():
            _check_psk(identity, key)

    def key_for(self, identity: bytes) -> bytes | None:
        if self.lookup is not None:
            return self.lookup(identity)
        return self.keys.get(identity)


def _check_psk(identity: bytes, key: bytes) -> None:
    # RFC 4279 5.3: identities up to 2^16-1 bytes, keys up to 64 bytes at least.
    if not 0 < len(identity) < 1 << 16:
        raise ValueError(f"a PSK identity is 1..65535 bytes, got {len(identity)}")
    if not 0 < len(key) <= 64:
        raise ValueError(f"a pre-shared key is 1..64 bytes, got {len(key)}")
