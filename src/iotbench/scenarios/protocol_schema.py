"""The scenario schema's `protocol` section: each protocol's settings
(schema.py holds the rest of a scenario file; radio_schema.py its radio network)."""

from __future__ import annotations

from iotbench.net.ieee802154 import MAX_PAYLOAD_BYTES as MAX_802154_PAYLOAD
from iotbench.net.tcp.params import TcpParams
from iotbench.proto.quic.params import QuicParams
from iotbench.scenarios.fields import (
    NDN_DEVICE_PROFILES,
    OPTIONAL,
    REQUIRED,
    Field,
    Section,
    Table,
)

COAP_EM = Section(
    doc="The Entity Manager of a group-query workload (S6, docs/coap-em.md).",
    fields={
        "mode": Field(
            "str",
            "unicast: one request per member; multicast: one NON to a group (RFC 7390).",
            "unicast",
            choices=("unicast", "multicast"),
        ),
        "delay_ms": Field("float", "Unicast: time between requests to members.", 0.0, ge=0),
        "emt": Field("str", "Unicast: message type to members.", "con", choices=("con", "non")),
        "leisure_s": Field(
            "float", "Multicast: the members' leisure (RFC 7252 8.2) and the EM's wait.", 5.0, ge=0
        ),
        "leisure_rate_bps": Field(
            "float",
            "Multicast: when set, the leisure is RFC 7252 8.2's lower bound S x G / R for "
            "this target rate R (S a member's CoAP answer, G the group size), not leisure_s.",
            OPTIONAL,
            gt=0,
        ),
        "multicast_margin_s": Field(
            "float", "Multicast: how long the EM waits after the leisure.", 1.0, ge=0
        ),
        "separate_response_after_s": Field(
            "float", "The EM's answers slower than this go after an empty ACK.", 1.0, gt=0
        ),
    },
    optional=True,
)

COAP_SECURITY = Section(
    doc="Security under CoAP (docs/coap.md, Security). Absent: plain CoAP.",
    fields={
        "mode": Field(
            "str",
            "dtls: DTLS 1.2 with a pre-shared key and TLS_PSK_WITH_AES_128_CCM_8 (RFC 7252 "
            "9.1.3.1), the client starting the handshake; oscore: OSCORE (RFC 8613) with a "
            "security context both ends hold from the start.",
            REQUIRED,
            choices=("dtls", "oscore"),
        ),
        "session": Field(
            "str",
            "dtls: persistent, one session for the whole run (the first item pays the "
            "handshake); per-request, a new handshake for every item and the session closed "
            "(close_notify) after it, like MQTT's and QUIC's connection per item.",
            "persistent",
            choices=("persistent", "per-request"),
        ),
        "handshake_timeout_s": Field(
            "float", "dtls: the flight timer's initial value (RFC 6347 4.2.4.1: 1 s).", 1.0, gt=0
        ),
        "handshake_max_timeout_s": Field(
            "float", "dtls: the flight timer's cap after doubling (RFC 6347: 60 s).", 60.0, gt=0
        ),
        "handshake_max_retransmit": Field(
            "int",
            "dtls: flight retransmissions before the handshake fails (tinydtls's 7).",
            7,
            ge=0,
        ),
    },
    optional=True,
)

COAP = Section(
    doc="CoAP (RFC 7252) client and server.",
    fields={
        "type": Field(
            "str",
            "Request message type: confirmable or non-confirmable.",
            "con",
            choices=("con", "non"),
        ),
        "ack_timeout_s": Field("float", "ACK_TIMEOUT, seconds.", 2.0, gt=0),
        "ack_random_factor": Field("float", "ACK_RANDOM_FACTOR.", 1.5, ge=1),
        "max_retransmit": Field("int", "MAX_RETRANSMIT.", 4, ge=0),
        "nstart": Field("int", "NSTART: outstanding interactions per server.", 1, ge=1),
        "non_timeout_s": Field(
            "float",
            "How long a NON request waits for a response before it is given up. Absent: "
            'MAX_TRANSMIT_WAIT (93 s with the defaults) with `rto = "rfc7252"`; with '
            '`rto = "cocoa"` the wait a CON would have with the current RTO estimate '
            "(adapts to the measured RTT).",
            OPTIONAL,
            gt=0,
        ),
        "rto": Field(
            "str",
            "Retransmission timeout: RFC 7252 fixed, or CoCoA adaptive.",
            "rfc7252",
            choices=("rfc7252", "cocoa"),
        ),
        "backoff": Field(
            "str",
            "With rto = rfc7252: exponential, the timeout doubles after each "
            "retransmission (RFC 7252 4.2); constant, every retransmission waits the "
            "same timeout (S4's alignment: 2 s, at most 4 times).",
            "exponential",
            choices=("exponential", "constant"),
        ),
        "token_length": Field("int", "Token length in bytes.", 2, ge=0, le=8),
        "block_size_bytes": Field(
            "int",
            "RFC 7959 block-wise transfers at this block size: the client asks for "
            "responses in blocks of it, the server sends larger bodies in blocks. "
            "Absent: bodies go whole (IP fragments them).",
            OPTIONAL,
            choices=(16, 32, 64, 128, 256, 512, 1024),
        ),
        "em": COAP_EM,
        "security": COAP_SECURITY,
    },
    optional=True,
)

_HEADER = Field("list", "", item=Field("str", ""), length=2)

HTTP = Section(
    doc="HTTP/1.1 (h11) or HTTP/2 (h2) client and server over the simulated TCP.",
    fields={
        "version": Field("str", "HTTP version.", "1.1", choices=("1.1", "2")),
        "connection": Field(
            "str",
            "persistent: one connection, requests sent as they are issued (HTTP/1.1 "
            "pipelining, HTTP/2 streams); per-request: a new connection for every request.",
            "persistent",
            choices=("persistent", "per-request"),
        ),
        "port": Field("int", "Server TCP port.", 80, ge=1, le=65535),
        "request_headers": Field(
            "list",
            "Extra request headers as [name, value] pairs, in order (Host, or HTTP/2's "
            "pseudo-headers, are added first).",
            [],
            item=_HEADER,
        ),
        "response_headers": Field(
            "list",
            "Response headers as [name, value] pairs, in order (Content-Type and "
            "Content-Length are added last).",
            [["Server", "iotbench"]],
            item=_HEADER,
        ),
        "minimal_settings": Field(
            "bool",
            "HTTP/2 only: an empty client SETTINGS frame and a server SETTINGS frame with "
            "only MAX_CONCURRENT_STREAMS (the IoT profile), instead of h2's full sets.",
            False,
        ),
    },
    optional=True,
)

_TCP_DEFAULTS = TcpParams()
TCP = Section(
    doc="TCP of both ends (Linux-like defaults; see docs/tcp.md).",
    fields={
        "mss_bytes": Field(
            "int",
            "Announced MSS; absent: interface MTU - 40 (IPv6: - 60).",
            OPTIONAL,
            ge=64,
            le=65495,
        ),
        "initial_window_segments": Field(
            "int",
            "Initial congestion window (RFC 6928).",
            _TCP_DEFAULTS.initial_window_segments,
            ge=1,
        ),
        "rto": Field(
            "str",
            "How the RTO follows the RTT: linux, SRTT + max(4 RTTVAR, min_rto_s) as Linux's "
            "tcp_set_rto; rfc6298, SRTT + 4 RTTVAR bounded below by min_rto_s (RFC 6298 2.4).",
            _TCP_DEFAULTS.rto,
            choices=("linux", "rfc6298"),
        ),
        "min_rto_s": Field(
            "float",
            "Minimum RTO; absent: 0.2 s with rto = linux (TCP_RTO_MIN), 1 s with rfc6298.",
            OPTIONAL,
            gt=0,
        ),
        "initial_rto_s": Field(
            "float", "Initial RTO (RFC 6298 1 s).", _TCP_DEFAULTS.initial_rto_s, gt=0
        ),
        "max_rto_s": Field("float", "Maximum RTO.", _TCP_DEFAULTS.max_rto_s, gt=0),
        "syn_retries": Field(
            "int", "SYN retransmissions before failing (Linux 6).", _TCP_DEFAULTS.syn_retries, ge=0
        ),
        "synack_retries": Field(
            "int", "SYN-ACK retransmissions (Linux 5).", _TCP_DEFAULTS.synack_retries, ge=0
        ),
        "max_retransmissions": Field(
            "int",
            "Retransmissions of a segment before the connection fails (Linux tcp_retries2 15).",
            _TCP_DEFAULTS.max_retransmissions,
            ge=0,
        ),
        "delayed_ack": Field(
            "bool", "Delayed ACKs (off: every segment at once).", _TCP_DEFAULTS.delayed_ack
        ),
        "ack": Field(
            "str",
            "When delayed ACKs go: linux, Linux's engine (quick ACKs at the start, ping-pong "
            "mode for replies, an ACK per two full segments or when small pushed segments are "
            "read, adaptive 40 ms timer); rfc5681, every second segment or delayed_ack_s.",
            _TCP_DEFAULTS.ack,
            choices=("linux", "rfc5681"),
        ),
        "delayed_ack_s": Field(
            "float", "Delayed-ACK timeout with ack = rfc5681.", _TCP_DEFAULTS.delayed_ack_s, gt=0
        ),
        "nagle": Field("bool", "Nagle's algorithm (off = TCP_NODELAY).", _TCP_DEFAULTS.nagle),
        "sack": Field("bool", "Negotiate SACK (RFC 2018).", _TCP_DEFAULTS.sack),
        "timestamps": Field("bool", "Negotiate timestamps (RFC 7323).", _TCP_DEFAULTS.timestamps),
        "window_scale": Field(
            "bool", "Negotiate window scaling (RFC 7323).", _TCP_DEFAULTS.window_scale
        ),
        "wscale": Field("int", "Window scale shift announced.", _TCP_DEFAULTS.wscale, ge=0, le=14),
        "fast_open": Field("bool", "TCP Fast Open (RFC 7413).", _TCP_DEFAULTS.fast_open),
        "prime_fast_open": Field(
            "bool",
            "Before the first item, open and close one connection to obtain the server's "
            "Fast Open cookie (RFC 7413 needs one from an earlier connection). Start the "
            "workload late enough (workload.start_s) for it to finish.",
            False,
        ),
        "receive_buffer_bytes": Field(
            "int", "Receive window announced.", _TCP_DEFAULTS.receive_buffer_bytes, ge=1
        ),
        "time_wait_s": Field("float", "TIME_WAIT duration.", _TCP_DEFAULTS.time_wait_s, ge=0),
        "fin_wait_2_s": Field(
            "float", "FIN_WAIT_2 timeout of a closed connection.", _TCP_DEFAULTS.fin_wait_2_s, ge=0
        ),
    },
    optional=True,
)

MQTT = Section(
    doc="MQTT 3.1.1 publisher (the sensor), broker and subscriber (at the sink).",
    fields={
        "qos": Field(
            "int", "QoS of the published messages and of the subscription.", 0, choices=(0, 1, 2)
        ),
        "topic": Field("str", "Topic the sensor publishes to.", "sensor/reading"),
        "client_id": Field("str", "The publisher's client identifier.", "sensor"),
        "keep_alive_s": Field(
            "int", "Keep Alive in CONNECT (also the CONNACK wait).", 60, ge=0, le=65535
        ),
        "retry_interval_s": Field(
            "float",
            "Re-send an unacknowledged PUBLISH over the same connection after this long "
            "(MQTT 3.1 style); absent: only on reconnection, as 3.1.1 requires.",
            OPTIONAL,
            gt=0,
        ),
        "port": Field("int", "Broker TCP port.", 1883, ge=1, le=65535),
    },
    optional=True,
)

MQTTSN = Section(
    doc="MQTT-SN 1.2 client (the sensor) and a transparent gateway beside the broker (the sink).",
    fields={
        "qos": Field(
            "int", "QoS of the published messages and of the subscription.", 0, choices=(0, 1, 2)
        ),
        "topic": Field(
            "str", "Topic name the sensor registers and publishes to.", "sensor/reading"
        ),
        "client_id": Field("str", "The sensor's client identifier.", "sensor"),
        "keep_alive_s": Field("int", "Keep-alive duration in CONNECT.", 60, ge=0, le=65535),
        "retry_interval_s": Field(
            "float", "Tretry (spec 6.13 suggests 10 to 15 s), client and gateway.", 10.0, gt=0
        ),
        "max_retries": Field("int", "Nretry (spec 6.13 suggests 3 to 5).", 3, ge=0),
        "retransmit": Field(
            "bool",
            "The client retransmits what gets no reply (Tretry/Nretry, spec 6.13). false: "
            "as S3's studied client, it does not; a lost CONNACK, REGACK or PUBACK abandons "
            "the session (the item is lost) once its wait timer, keep_alive_s, ran out.",
            True,
        ),
        "max_inflight": Field(
            "int",
            "Requests a client has outstanding at once: 1, the specification's one at a time; "
            "RIOT's asymcute (S4) has a context for each of up to 128.",
            1,
            ge=1,
        ),
        "give_up": Field(
            "str",
            "What Nretry unanswered re-sends end: disconnect, the connection (spec 6.13); "
            "request, that request alone (RIOT's asymcute, S4).",
            "disconnect",
            choices=("disconnect", "request"),
        ),
        "port": Field(
            "int", "Gateway UDP port (1883, as RSMB and mqtt-sn-tools use).", 1883, ge=1, le=65535
        ),
    },
    optional=True,
)

_QUIC_DEFAULTS = QuicParams()
QUIC = Section(
    doc="QUIC (aioquic) client at the sink and server at the sensor; one stream per request.",
    fields={
        "connection": Field(
            "str",
            "per-request: a new connection (and handshake) for every request; reuse: one "
            "connection for all.",
            _QUIC_DEFAULTS.connection,
            choices=("per-request", "reuse"),
        ),
        "zero_rtt": Field(
            "bool",
            "Per-request connections resume the previous session and send the request as "
            "0-RTT data.",
            _QUIC_DEFAULTS.zero_rtt,
        ),
        "idle_timeout_s": Field(
            "float", "max_idle_timeout (RFC 9000 10.1).", _QUIC_DEFAULTS.idle_timeout_s, gt=0
        ),
        "initial_rtt_s": Field(
            "float", "RTT before a sample (RFC 9002 6.2.2).", _QUIC_DEFAULTS.initial_rtt_s, gt=0
        ),
        "congestion_control": Field(
            "str",
            "aioquic's congestion controller.",
            _QUIC_DEFAULTS.congestion_control,
            choices=("reno", "cubic"),
        ),
        "port": Field("int", "Server UDP port.", 4433, ge=1, le=65535),
    },
    optional=True,
)

HOPP = Section(
    doc="HoPP's timers and tables (publish, ndn_exchange = hopp); the defaults are the "
    "reference implementation's (RIOT's net/hopp/hopp.h, COMPAS).",
    fields={
        "trickle_imin_s": Field("float", "PAM Trickle Imin (HOPP_TRICKLE_IMIN).", 0.064, gt=0),
        "trickle_doublings": Field(
            "int", "PAM Trickle doublings (HOPP_TRICKLE_IMAX).", 16, ge=0, le=30
        ),
        "trickle_k": Field("int", "PAM Trickle redundancy (HOPP_TRICKLE_REDCONST).", 5, ge=1),
        "sol_period_s": Field(
            "list",
            "SOL period [base, base + jitter] (HOPP_SOL_PERIOD).",
            [4.0, 5.0],
            item=Field("float", "", gt=0),
            length=2,
        ),
        "nam_period_s": Field(
            "list",
            "Wait before a NAM is sent again [base, base + jitter] (HOPP_NAM_PERIOD).",
            [1.0, 1.5],
            item=Field("float", "", gt=0),
            length=2,
        ),
        "parent_timeout_s": Field(
            "list",
            "A parent not heard for this long [base, base + jitter] is asked again "
            "(HOPP_PARENT_TIMEOUT_PERIOD).",
            [30.0, 35.0],
            item=Field("float", "", gt=0),
            length=2,
        ),
        "nam_retries": Field("int", "NAMs sent per name (COMPAS_NAM_CACHE_RETRIES).", 3, ge=1),
        "nam_stale_s": Field(
            "float", "A NAM-cache entry this old may be replaced (HOPP_NAM_STALE_TIME).", 10.0, gt=0
        ),
        "nam_cache_entries": Field("int", "NAM cache size (COMPAS_NAM_CACHE_LEN).", 20, ge=1),
    },
    optional=True,
)

NDN = Section(
    doc="NDN consumer and producer on an 802.15.4 link (network.link.layer = ieee802154).",
    fields={
        "prefix": Field(
            "str",
            "The producer's prefix; item i asks for <prefix>/<i>. publish: the common prefix "
            "of every producer's, <prefix>/<link-layer address>/<resource>/<n> (S4: /i3).",
            "/producer",
        ),
        "data_source": Field(
            "str",
            "producer-app: the producer creates and signs each Data on request; "
            "producer-cache: the producer's Content Store holds every Data before the run; "
            "consumer-cache: the consumer's own Content Store does.",
            "producer-app",
            choices=("producer-app", "producer-cache", "consumer-cache"),
        ),
        "signature": Field(
            "str",
            "Data signature; none: CCN-lite's unsigned Data (SignatureType DigestSha256, an "
            "empty SignatureValue, an empty MetaInfo), S4's network runs.",
            "ecdsa",
            choices=("ecdsa", "hmac", "digest", "none"),
        ),
        "data_bytes": Field(
            "int",
            "Size of each Data packet: its content (a reading) is padded or cut to reach it "
            "(within a byte or two: a DER ECDSA signature is 70 to 72 bytes).",
            100,
            ge=64,
            le=3000,
        ),
        "freshness_period_ms": Field(
            "int",
            "FreshnessPeriod of the Data; absent: no MetaInfo (6 bytes less).",
            OPTIONAL,
            ge=0,
        ),
        "interest_lifetime_ms": Field("int", "InterestLifetime.", 4000, ge=1),
        "mtu_bytes": Field(
            "int",
            "Radio networks: the largest NDN packet or fragment a frame carries (longer ones "
            "are cut into S5 fragments); absent: all a frame holds. Pair networks use "
            "network.link.mtu_bytes.",
            OPTIONAL,
            ge=8,
            le=MAX_802154_PAYLOAD,
        ),
        "profile": Field(
            "str",
            "Device profile of both nodes: CPU cost of each operation, RAM for PIT/CS.",
            "m3",
            choices=NDN_DEVICE_PROFILES,
        ),
        "pit_max_entries": Field(
            "int",
            "PIT entries per node; absent: what the device profile's RAM budget holds, or "
            "no count at all with heap_bytes (CCN-lite checks none).",
            OPTIONAL,
            ge=1,
        ),
        "heap_bytes": Field(
            "int",
            "CCN-lite's heap on RIOT (S4): faces, FIB, PIT and Content Store entries take "
            "the bytes CCN-lite allocates for them from a pool of this size (the apps' "
            "TLSF_BUFFER), and an Interest or Data that does not fit is dropped "
            "(proto/ndn/heap.py); absent: no heap.",
            OPTIONAL,
            ge=4096,
        ),
        "pit_overflow": Field(
            "str",
            "What a full PIT does with a new Interest: drop it, or overwrite the oldest entry.",
            "drop-new",
            choices=("drop-new", "replace-oldest"),
        ),
        "cs_max_bytes": Field(
            "int",
            "Content Store capacity per node in Data bytes (0: no caching); absent: the "
            "device profile's.",
            OPTIONAL,
            ge=0,
        ),
        "fib_max_entries": Field(
            "int", "FIB prefixes per node; absent: the device profile's budget.", OPTIONAL, ge=1
        ),
        "retx_max": Field(
            "int",
            "Hop-by-hop Interest retransmissions by each forwarder (S4: 4); 0 leaves "
            "retransmission to the consumer.",
            0,
            ge=0,
            le=100,
        ),
        "retx_interval_s": Field(
            "float", "Wait before a hop-by-hop retransmission (S4: 2 s).", 2.0, gt=0
        ),
        "cs_max_entries": Field(
            "int",
            "Content Store capacity per node in Data packets, as well as bytes (CCN-lite "
            "counts entries, CCNL_CACHE_SIZE); absent: no such bound.",
            OPTIONAL,
            ge=0,
        ),
        "nonce_check": Field(
            "str",
            "nfd: an Interest whose nonce its PIT entry saw from another face is a loop, "
            "the same nonce from the same face a retransmission; ccn-lite: any nonce the "
            "entry has seen is a duplicate and dropped (S4's CCN-lite), so a hop-by-hop "
            "retransmission reaches a next hop only where the Interest was lost.",
            "nfd",
            choices=("nfd", "ccn-lite"),
        ),
        "hopp": HOPP,
    },
    optional=True,
)

# One entry per protocol stack; `protocol.name` chooses among these keys.
PROTOCOLS: dict[str, Section] = {
    "coap": COAP,
    "http": HTTP,
    "mqtt": MQTT,
    "quic": QUIC,
    "ndn": NDN,
    "mqttsn": MQTTSN,
}
# Protocols that run over the simulated TCP (and so get a `protocol.tcp` section).
OVER_TCP = frozenset({"http", "mqtt"})


def _fill_selected_protocol(protocol: Table) -> Table:
    # The selected protocol's section gets its defaults even when the file omits
    # it; sections of other protocols may stay (presets switch between them).
    name = protocol.get("name")
    if isinstance(name, str) and name in PROTOCOLS and name not in protocol:
        protocol = {**protocol, name: {}}
    if name in OVER_TCP and "tcp" not in protocol:
        protocol = {**protocol, "tcp": {}}
    return protocol


PROTOCOL = Section(
    doc="The protocol stack under test and its settings.",
    fields={
        "name": Field("str", "Protocol stack.", choices=tuple(PROTOCOLS)),
        **PROTOCOLS,
        "tcp": TCP,
    },
    prepare=_fill_selected_protocol,
)
