"""The command line of real mode: `iotbench serve`, `client` and `shim`, their
options and --help (cli.py adds them beside the simulation's commands)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from iotbench.argtypes import (
    add_filter_option,
    add_set_option,
    ipv6_prefix_length,
    non_negative_int,
    port,
    positive_float,
    positive_int,
)

SERVE_PROTOCOLS = ("coap", "coap-em", "http", "mqtt", "mqttsn-gateway", "ndn")
CLIENT_PROTOCOLS = ("coap", "mqtt", "mqttsn")  # clients `client` runs on real sockets

Handler = Callable[[argparse.Namespace], int]


def add_real_commands(
    commands, formatter: type, *, serve: Handler, client: Handler, shim: Handler
) -> None:
    """Add serve, client and shim to `commands` (argparse's subparsers)."""
    add_serve_command(commands, formatter, serve)
    add_client_command(commands, formatter, client)
    add_shim_command(commands, formatter, shim)


def add_serve_command(commands, formatter: type, handler: Handler) -> None:
    """`iotbench serve PROTOCOL`: the options every server takes, then each
    server's own group."""
    p = commands.add_parser(
        "serve",
        help="run a protocol server on a real socket",
        description="Serve the sensor resources with the simulator's protocol stack on a real\n"
        "socket, until Ctrl-C. CoAP: /voltage (observable), /json, /o, /store,\n"
        "/.well-known/core; at most 16 observations per client and 1,000 per resource,\n"
        "every 5th notification confirmable, and an observer that is gone (no ACK, a\n"
        "reset, or the OS's port unreachable) is dropped (RFC 7641 4.5); /mc joins and\n"
        "leaves IPv6 multicast groups (S6).\n"
        "CoAP Entity Manager (coap-em): groups of CoAP resources behind one resource\n"
        "(S6, docs/coap-em.md): POST /e with a JSON profile, then GET /e/<name>.\n"
        "HTTP/1.1 (h11 over the OS's TCP): /voltage, /json, /o.\n"
        "MQTT 3.1.1: a broker (any topic, QoS 0-2, retained and will messages, sessions);\n"
        "--password-file and --acl-file take mosquitto's files (docs/mqtt.md).\n"
        "MQTT-SN gateway: a transparent MQTT-SN 1.2 gateway on UDP for an MQTT broker\n"
        "(--broker), one MQTT connection per MQTT-SN client.\n"
        "NDN: a forwarder with faces on UDP and TCP (one port, NFD's framing) and a\n"
        "producer answering Interests for PREFIX/voltage, PREFIX/json and PREFIX/o with\n"
        "signed Data holding a new reading; the name after the resource is free\n"
        "(e.g. PREFIX/voltage/seq=7) and the Data carries the Interest's name.",
        epilog="examples:\n"
        "  iotbench serve coap                                  127.0.0.1:5683\n"
        "  iotbench serve coap --host :: --port 5700 --object-size 1000\n"
        "  iotbench serve coap --psk-identity dev1 --psk-key s3cret    coaps://127.0.0.1:5684\n"
        "  iotbench serve coap --oscore server.json             OSCORE (docs/coap.md)\n"
        "  iotbench serve coap-em --host ::1 --port 5690            members: iotbench serve coap\n"
        "  iotbench serve coap-em --host :: --allow-members fd00::/64   members on fd00::/64\n"
        "  iotbench serve http --port 8080                      then: curl http://127.0.0.1:8080/json\n"
        "  iotbench serve mqtt --port 1883                      then: iotbench client mqtt sub ...\n"
        "  iotbench serve mqtt --password-file passwd --acl-file acl    users, topic access\n"
        "  iotbench serve mqttsn-gateway --port 1884 --broker 127.0.0.1:1883\n"
        "  iotbench serve mqttsn-gateway --port 1884 --predefined-topic 7=sensors/t7\n"
        "  iotbench serve ndn                                   UDP and TCP 127.0.0.1:6363\n"
        "  iotbench serve ndn --prefix /lab/s1 --signer hmac --hmac-key secret --freshness 500\n"
        "  iotbench serve ndn --ecdsa-key key.pem               a fixed P-256 key (PEM or DER)\n",
        formatter_class=formatter,
    )
    p.add_argument("protocol", choices=SERVE_PROTOCOLS, help="protocol stack")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: %(default)s)")
    p.add_argument(
        "--port",
        type=port,
        default=None,
        help="port to bind (default: coap and coap-em 5683, http 8080, mqtt 1883, mqttsn-gateway 1883"
        " (UDP), ndn 6363)",
    )
    p.add_argument(
        "--object-size",
        type=non_negative_int,
        default=100,
        metavar="BYTES",
        help="size of the object at /o, coap, http and ndn (default: %(default)s)",
    )
    p.add_argument(
        "--observe-interval",
        type=positive_float,
        default=5.0,
        metavar="S",
        help="seconds between notifications to observers of /voltage, coap (default: %(default)s)",
    )
    _add_coap_server_options(p)
    _add_em_options(p)
    _add_mqtt_options(p)
    _add_gateway_options(p)
    _add_ndn_options(p)
    p.set_defaults(handler=handler)


def _add_coap_server_options(p: argparse.ArgumentParser) -> None:
    dtls = add_psk_arguments(p, "serve coaps:// (default port 5684) and accept this identity only")
    dtls.add_argument(
        "--dtls-max-sessions",
        type=positive_int,
        metavar="N",
        help="established sessions kept (default: 256); a handshake that completes when all"
        " are taken closes the least recently active one. Handshakes in progress never do",
    )
    dtls.add_argument(
        "--dtls-max-handshakes",
        type=positive_int,
        metavar="N",
        help="handshakes in progress kept, apart from the sessions (default: 100, libcoap's);"
        " a new one when all are taken ends the oldest started",
    )
    add_oscore_argument(p, "answer only requests protected with these (others: 4.01)", many=True)


def _add_em_options(p: argparse.ArgumentParser) -> None:
    em = p.add_argument_group("coap-em")
    em.add_argument(
        "--member-timeout",
        type=positive_float,
        metavar="S",
        help="the longest a query waits for members before it answers with those that"
        " did (the rest: 'no response'); default: 93 s, CoAP's give-up for CON",
    )
    em.add_argument(
        "--allow-members",
        nargs="+",
        metavar="PREFIX",
        help="networks whose addresses may be members (e.g. fd00::/64 192.168.1.0/24),"
        " besides this host's loopback; a profile naming another is refused with 4.03;"
        " 'any' allows every address (the EM then reflects requests anywhere)."
        " Default: loopback only",
    )
    em.add_argument(
        "--max-entities-per-client",
        type=positive_int,
        metavar="N",
        help="entities one client (an IPv4 address, an IPv6 /64) may create (default: 8;"
        " beyond: 5.03, Max-Age)",
    )
    em.add_argument(
        "--allow-creators",
        nargs="+",
        metavar="ID",
        help="only these authenticated clients may create entities: DTLS PSK identities"
        " (with --psk-identity/--psk-key) or OSCORE Sender IDs in hex (with --oscore);"
        " others get 4.03, unauthenticated ones 4.01. Default: any client",
    )
    em.add_argument(
        "--max-queries-per-client",
        type=positive_int,
        metavar="N",
        help="queries one client may have in progress (default: 4; beyond: 5.03)",
    )
    em.add_argument(
        "--max-entities",
        type=positive_int,
        metavar="N",
        help="entities this EM holds, from every client (default: 256; beyond: 5.03)",
    )
    em.add_argument(
        "--max-queries",
        type=positive_int,
        metavar="N",
        help="queries in progress from every client together (default: 64; beyond: 5.03)",
    )
    em.add_argument(
        "--max-requests-per-query",
        type=positive_int,
        metavar="N",
        help="requests to members one query may cause, nested entities included"
        " (default: 256); a query or profile over it is refused with 4.03",
    )
    em.add_argument(
        "--max-bytes-per-query",
        type=positive_int,
        metavar="B",
        help="bytes of requests to members one query may cause, every retransmission of a"
        " CON request counted (default: 65536; beyond: 4.03)",
    )
    em.add_argument(
        "--max-nesting-depth",
        type=positive_int,
        metavar="N",
        help="levels of this EM's entities one query may pass through, 1 meaning members"
        " only (default: 4; beyond: 4.03)",
    )
    em.add_argument(
        "--client-prefix-v6",
        type=ipv6_prefix_length,
        metavar="BITS",
        help="the per-client limits count IPv6 clients by this network prefix (default: 64,"
        " as one host usually holds a /64; 128: by address)",
    )
    em.add_argument(
        "--shared-entities",
        action="store_true",
        default=None,
        help="let any client change or delete any entity (default: only the client that"
        " created it, by its DTLS/OSCORE identity, else its address and port)",
    )


def _add_mqtt_options(p: argparse.ArgumentParser) -> None:
    mqtt = p.add_argument_group(
        "mqtt",
        "Users and topic access in mosquitto's formats (mosquitto.conf(5)); a bad file"
        " stops the broker with the file, line and problem.",
    )
    mqtt.add_argument(
        "--password-file",
        type=Path,
        metavar="FILE",
        help="lines user:password; the password plain or hashed by mosquitto_passwd ($7$,"
        " $6$). Wrong credentials get CONNACK 4; clients without a user name get 5"
        " unless --allow-anonymous",
    )
    mqtt.add_argument(
        "--acl-file",
        type=Path,
        metavar="FILE",
        help="topic [read|write|readwrite|deny] TOPIC lines, in `user NAME` sections (before"
        " any: anonymous clients), and pattern lines with %%c (client id) and %%u (user"
        " name) for all; what it does not grant is denied: SUBACK 0x80, PUBLISH dropped,"
        " messages withheld",
    )
    mqtt.add_argument(
        "--allow-anonymous",
        action="store_true",
        default=None,
        help="let clients without a user name connect although there is a --password-file"
        " (default: only without one)",
    )


def _add_gateway_options(p: argparse.ArgumentParser) -> None:
    gateway = p.add_argument_group("mqttsn-gateway")
    gateway.add_argument(
        "--broker",
        metavar="HOST:PORT",
        help="the MQTT broker to bridge to (default: 127.0.0.1:1883)",
    )
    gateway.add_argument(
        "--predefined-topic",
        action="append",
        metavar="ID=TOPIC",
        help="a predefined topic id (1-65534) and its topic name, known to the clients"
        " in advance; they may publish to it with QoS -1; repeat for more",
    )
    gateway.add_argument(
        "--max-clients",
        type=positive_int,
        metavar="N",
        help="clients kept at once, each with its own broker connection (default: 1000);"
        " one more gets CONNACK 'rejected: congestion'",
    )
    gateway.add_argument(
        "--max-new-clients",
        type=non_negative_int,
        metavar="N",
        help="of these, clients still connecting or silent since their CONNACK (a CONNECT"
        " is easily sent from a spoofed address): one more, or a CONNECT that finds the"
        " table full, ends the oldest of them instead of being refused (default: a quarter"
        " of --max-clients; 0: no share, a full table refuses)",
    )
    gateway.add_argument(
        "--idle-timeout",
        type=_seconds_or_never,
        metavar="S",
        help="a client with keep-alive 0 (CONNECT Duration 0: never supervised, as in"
        " MQTT) is given up after this long without a message from it (default: 600;"
        " 0: never)",
    )
    gateway.add_argument(
        "--max-topic-name-bytes",
        type=_topic_bytes,
        metavar="BYTES",
        help="the longest topic name or filter, in UTF-8 octets, a client may REGISTER,"
        " SUBSCRIBE to or give as its will topic; longer gets 'rejected: not supported'"
        " (default: 256; at most 65535, MQTT's limit)",
    )
    gateway.add_argument(
        "--max-topic-bytes-per-client",
        type=positive_int,
        metavar="BYTES",
        help="octets of topic names one client's topic table may hold; a REGISTER beyond"
        " gets 'rejected: congestion' (default: 65536)",
    )


def _add_ndn_options(p: argparse.ArgumentParser) -> None:
    ndn = p.add_argument_group("ndn")
    ndn.add_argument("--prefix", help="name the producer serves (default: /iotbench/sensor)")
    ndn.add_argument(
        "--signer",
        choices=("ecdsa", "hmac", "digest"),
        help="Data signature (default: ecdsa, or hmac with --hmac-key). ecdsa (P-256,"
        " SHA-256) because a consumer verifies it with the public key alone, which the"
        " server prints and publishes as Data at the KeyLocator name: no secret to share."
        " hmac (HMAC-SHA256) needs --hmac-key at both ends; digest (DigestSha256) shows"
        " integrity only",
    )
    ndn.add_argument("--hmac-key", metavar="SECRET", help="the HMAC key (text, UTF-8)")
    ndn.add_argument(
        "--ecdsa-key",
        type=Path,
        metavar="FILE",
        help="P-256 private key, PEM or DER, unencrypted (default: a new key each start)",
    )
    ndn.add_argument(
        "--freshness",
        type=non_negative_int,
        metavar="MS",
        help="FreshnessPeriod of the Data, in milliseconds (default: 1000)",
    )


def add_client_command(commands, formatter: type, handler: Handler) -> None:
    """`iotbench client PROTOCOL ...`: one request, publication or subscription."""
    p = commands.add_parser(
        "client",
        help="send one request (or publish/subscribe) over a real socket",
        description="Send one request with the simulator's protocol stack over a real socket.\n"
        "The payload goes to stdout, the response code and timing to stderr; the exit\n"
        "status is 0 for a 2.xx response and 1 otherwise. --observe N shows every\n"
        "reading (the registration's response, then N notifications) and one summary.\n"
        "Where nothing listens (the OS reports port or host unreachable, or refuses\n"
        "the connection), every client fails at once and says so.\n\n"
        "MQTT-SN works the same way with mqttsn://host[:port]/topic URIs (UDP port 1883)\n"
        "through a gateway; --topic-id N uses a predefined topic id, --qos -1 publishes\n"
        "without a connection (predefined topics only).\n\n"
        "MQTT: METHOD is pub or sub, URI is mqtt://[user[:password]@]host[:port]/topic\n"
        "(port 1883; write a # wildcard as %23). pub publishes --payload --count times\n"
        "and waits until each is done (QoS 1: PUBACK, QoS 2: PUBCOMP); sub prints each\n"
        "payload on stdout until --count messages arrived or --timeout passed. Exit status\n"
        "0 on success, 1 if the broker refused, the connection failed or the time ran out\n"
        "before --count messages.",
        epilog="examples:\n"
        "  iotbench client coap GET coap://127.0.0.1/voltage\n"
        "  iotbench client coap GET coap://127.0.0.1/voltage --observe 3\n"
        "  iotbench client coap PUT coap://127.0.0.1/store --payload hello --non\n"
        "  iotbench client coap GET 'coap://[::1]:5700/.well-known/core' --timeout 5\n"
        "  iotbench client coap GET coap://127.0.0.1/o --block-size 64\n"
        "  iotbench client coap GET coaps://127.0.0.1/voltage --psk-identity dev1 --psk-key s3cret\n"
        "  iotbench client coap GET coap://127.0.0.1/voltage --oscore client.json\n"
        "  iotbench client mqtt sub 'mqtt://127.0.0.1/sensors/%23' --qos 1 --count 3\n"
        "  iotbench client mqtt pub mqtt://127.0.0.1/sensors/t1 --payload 21.5 --qos 1\n"
        "  iotbench client mqtt pub mqtt://127.0.0.1/sensors/t1 --payload on --retain\n"
        "  iotbench client mqttsn pub mqttsn://127.0.0.1:1884/sensors/t1 --payload 21.5 --qos 1\n"
        "  iotbench client mqttsn pub mqttsn://127.0.0.1:1884 --topic-id 7 --qos -1 --payload x\n",
        formatter_class=formatter,
    )
    p.add_argument("protocol", choices=CLIENT_PROTOCOLS, help="protocol stack")
    p.add_argument(
        "method", metavar="METHOD", help="coap: GET, POST, PUT or DELETE; mqtt: pub or sub"
    )
    p.add_argument(
        "uri",
        metavar="URI",
        help="e.g. coap://127.0.0.1/voltage or mqtt://127.0.0.1/sensors/t1",
    )
    p.add_argument("--payload", help="request payload or message to publish (text)")
    p.add_argument(
        "--content-format",
        type=non_negative_int,
        metavar="N",
        help="Content-Format of the payload, e.g. 0 text/plain, 50 application/json",
    )
    p.add_argument("--non", action="store_true", help="send a non-confirmable request")
    add_psk_arguments(p, "for coaps:// URIs")
    add_oscore_argument(p, "protect the request (coap:// URIs) with this context")
    p.add_argument(
        "--block-size",
        type=int,
        choices=(16, 32, 64, 128, 256, 512, 1024),
        metavar="BYTES",
        help="CoAP: RFC 7959 block-wise: ask for responses in blocks of this size and "
        "upload payloads larger than it in blocks (default: follow the server's blocks, "
        "upload whole); 16, 32, ... 1024",
    )
    p.add_argument(
        "--observe",
        type=non_negative_int,
        default=0,
        metavar="N",
        help="register as an observer (RFC 7641) and wait for N notifications",
    )
    p.add_argument(
        "--qos",
        type=int,
        choices=(-1, 0, 1, 2),
        default=None,
        help="mqtt, mqttsn: QoS of the publication or subscription (default: 0; -1: MQTT-SN"
        " publish without a connection)",
    )
    p.add_argument(
        "--topic-id",
        type=non_negative_int,
        default=None,
        metavar="N",
        help="mqttsn: a predefined topic id instead of the URI's topic name",
    )
    p.add_argument("--retain", action="store_true", help="mqtt pub: retain the message")
    p.add_argument(
        "--count",
        type=non_negative_int,
        default=None,
        metavar="N",
        help="mqtt: publish N times (default 1), or receive N messages (default: no limit)",
    )
    p.add_argument(
        "--timeout",
        type=positive_float,
        default=None,
        metavar="S",
        help="give up after S seconds (default: the protocol's own give-up time, 93 s for CoAP;"
        " a subscription without --count ends here)",
    )
    p.set_defaults(handler=handler)


def add_shim_command(commands, formatter: type, handler: Handler) -> None:
    """`iotbench shim`: real UDP traffic through a simulated network."""
    p = commands.add_parser(
        "shim",
        help="relay real UDP traffic through a simulated, impaired network",
        description="Listen for UDP clients on --listen and relay their datagrams to the server\n"
        "at --to, and back, through the network of a scenario: the simulator's own IP, UDP,\n"
        "fragmentation, link (rate, queue, delay, MTU) and impairment models (loss, delay,\n"
        "outages, redraws), running in real time. to_server impairments apply to what\n"
        "clients send, to_client ones to the answers. Each client gets a socket of its own\n"
        "towards the server. Item-based schedules count each client datagram as an item.\n"
        "Runs until Ctrl-C, then prints what it relayed and what the link dropped.\n\n"
        "The network comes from a scenario (--scenario, with --filter picking one network\n"
        "of its sweep) or from the [network] table of a TOML file (--network); --set\n"
        "changes network.* keys of either (see docs/scenarios.md for every key).",
        epilog="examples:\n"
        "  iotbench serve coap --port 5683 &\n"
        "  iotbench shim --listen 127.0.0.1:5684 --to 127.0.0.1:5683 \\\n"
        "      --scenario s3-robustness --filter condition=loss-10\n"
        "  iotbench client coap GET coap://127.0.0.1:5684/voltage    through the shim\n\n"
        "  iotbench shim --listen [::1]:5684 --to 127.0.0.1:5683 --network lossy.toml --pcap shim.pcap\n"
        "  iotbench shim --listen 127.0.0.1:5684 --to 127.0.0.1:5683 --network lossy.toml \\\n"
        "      --set network.link.delay_s=0.2 --seed 7\n\n"
        "  lossy.toml:  [network.link]\n"
        "               rate_bps = 250000\n"
        "               delay_s = 0.005\n"
        "               [network.impair.to_server.loss]\n"
        '               model = "bernoulli"\n'
        "               p = 0.05\n",
        formatter_class=formatter,
    )
    p.add_argument(
        "--listen",
        required=True,
        metavar="HOST:PORT",
        help="UDP address for the clients (port 0: any free port)",
    )
    p.add_argument("--to", required=True, metavar="HOST:PORT", help="the UDP server to relay to")
    p.add_argument("--scenario", metavar="NAME|FILE", help="take the network of this scenario")
    add_filter_option(
        p,
        "with --scenario: keep only runs with this axis value, until one network is left",
        "AXIS=V",
    )
    p.add_argument("--network", type=Path, metavar="FILE", help="a TOML file with [network]")
    add_set_option(p, "override a network.* key, e.g. network.link.delay_s=0.1 (repeatable)")
    p.add_argument(
        "--seed",
        type=non_negative_int,
        help="seed of the network's random streams (default: the scenario's network seed, or 1)",
    )
    p.add_argument(
        "--items",
        type=positive_int,
        metavar="N",
        help="how many items random-items outages choose among (default: the scenario's"
        " workload.items)",
    )
    p.add_argument("--pcap", metavar="FILE", help="write the simulated link's packets here")
    p.add_argument(
        "--max-clients",
        type=positive_int,
        default=1024,
        metavar="N",
        help="client addresses relayed at once (default: %(default)s)",
    )
    p.add_argument(
        "--idle-timeout",
        type=positive_float,
        default=300.0,
        metavar="S",
        help="forget a client silent for S seconds (default: %(default)s)",
    )
    p.set_defaults(handler=handler)


def add_psk_arguments(p: argparse.ArgumentParser, what: str):
    """CoAP over DTLS 1.2 with a pre-shared key (TLS_PSK_WITH_AES_128_CCM_8); returns
    the option group, for a server's further DTLS options."""
    dtls = p.add_argument_group(
        "coap over DTLS",
        f"DTLS 1.2 with a pre-shared key, TLS_PSK_WITH_AES_128_CCM_8 (RFC 7252 9.1.3.1): {what}."
        " Text, as libcoap's -u and -k take them.",
    )
    dtls.add_argument("--psk-identity", metavar="ID", help="the PSK identity (RFC 4279)")
    dtls.add_argument("--psk-key", metavar="KEY", help="the pre-shared key")
    return dtls


def add_oscore_argument(p: argparse.ArgumentParser, what: str, many: bool = False) -> None:
    """OSCORE (RFC 8613) with a context file in aiocoap's format (real/coap_oscore.py)."""
    oscore = p.add_argument_group(
        "coap with OSCORE",
        f"OSCORE (RFC 8613), AES-CCM-16-64-128 with HKDF-SHA256: {what}. The file has"
        " aiocoap's keys (sender-id_hex, recipient-id_hex, secret_ascii or secret_hex,"
        " salt_hex, id-context_hex); its sequence numbers are kept in NAME.sequence.json"
        " beside it (docs/coap.md, OSCORE).",
    )
    oscore.add_argument(
        "--oscore",
        type=Path,
        action="append" if many else "store",
        metavar="CONTEXT.json",
        help="a context file; repeat it for each client" if many else "the context file",
    )


def _seconds_or_never(text: str) -> float:
    """Seconds > 0, or 0 for never."""
    try:
        if float(text) == 0:
            return 0.0
    except ValueError:
        pass
    return positive_float(text)


def _topic_bytes(text: str) -> int:
    """A topic name's length: 1 up to MQTT's 65535 octets."""
    value = positive_int(text)
    if value > 0xFFFF:
        raise argparse.ArgumentTypeError(f"{value} is more than MQTT's 65535 octets")
    return value
