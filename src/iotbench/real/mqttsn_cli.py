"""`iotbench serve mqttsn-gateway` and `iotbench client mqttsn pub|sub`.

Called by real/cli.py with the parsed arguments (which also runs and stops
the server); user errors raise UserError (one line, exit code 2), never a
traceback.
"""

from __future__ import annotations

import argparse
import sys

from iotbench.proto.mqttsn.codec import TopicIdType
from iotbench.proto.mqttsn.events import MessageReceived
from iotbench.proto.mqttsn.params import MqttSnGatewayParams
from iotbench.real.coap import RealModeError
from iotbench.real.mqtt_cli import check_pub_sub, run_pub_sub
from iotbench.real.mqttsn import (
    GatewayDriver,
    gateway_address,
    mqttsn_publish,
    mqttsn_subscribe,
    parse_mqttsn_uri,
    serve_mqttsn_gateway,
)
from iotbench.scenarios import UserError

ACTIONS = ("pub", "sub")
DEFAULT_BROKER = "127.0.0.1:1883"
#: What `serve mqttsn-gateway` bounds by default against clients that anyone on the
#: network can be (docs/mqttsn.md, "The gateway under abuse"). The sans-I/O defaults
#: leave these to the specification, so that no simulated run changes.
IDLE_TIMEOUT_S = 600.0  # a client with keep-alive 0 silent this long is given up
NEW_CLIENTS_SHARE = 4  # new clients may hold a quarter of --max-clients
MAX_TOPIC_NAME_BYTES = 256


def broker_address(text: str) -> tuple[str, int]:
    """ "host:port", "[v6 address]:port", or a host alone (port 1883) -> (host, port)."""
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else "1883"
    else:
        host, _, port = text.partition(":")
        port = port or "1883"
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UserError(f"--broker {text!r}: expected HOST:PORT, e.g. 127.0.0.1:1883")
    return host, int(port)


def predefined_topics(pairs: list[str] | None) -> dict[int, str]:
    """["7=sensors/t7", ...] -> {7: "sensors/t7", ...}; UserError naming the bad pair."""
    topics: dict[int, str] = {}
    for pair in pairs or ():
        topic_id, sep, name = pair.partition("=")
        if not sep or not topic_id.isdigit() or not name:
            raise UserError(f"--predefined-topic {pair!r}: expected ID=TOPIC, e.g. 7=sensors/t7")
        if int(topic_id) in topics:
            raise UserError(f"--predefined-topic {pair!r}: topic id {int(topic_id)} given twice")
        topics[int(topic_id)] = name
    return topics


def gateway_params(args: argparse.Namespace) -> MqttSnGatewayParams:
    """The gateway's parameters from `serve mqttsn-gateway`'s options, with the real
    server's defaults for the bounds the options leave open."""
    sans_io = MqttSnGatewayParams  # its class defaults
    max_clients = args.max_clients or sans_io.max_clients
    new = args.max_new_clients
    if new is None:
        new = max(1, max_clients // NEW_CLIENTS_SHARE)
    idle = IDLE_TIMEOUT_S if args.idle_timeout is None else args.idle_timeout
    try:
        return MqttSnGatewayParams(
            predefined_topics=predefined_topics(args.predefined_topic),
            max_clients=max_clients,
            max_new_clients=new or None,  # 0: no share of their own
            idle_timeout_s=idle or None,  # 0: never
            max_topic_name_bytes=args.max_topic_name_bytes or MAX_TOPIC_NAME_BYTES,
            max_topic_bytes_per_client=(
                args.max_topic_bytes_per_client or sans_io.max_topic_bytes_per_client
            ),
        )
    except ValueError as exc:
        # The parameters' own check; the options' types have checked every number, so
        # what is left is a predefined topic: id range, wildcards, duplicates.
        raise UserError(f"--predefined-topic: {exc}") from None


def describe_bounds(params: MqttSnGatewayParams) -> str:
    """One line on what the gateway bounds, for its start-up message."""
    new = params.max_new_clients
    idle = params.idle_timeout_s
    return (
        f"  at most {params.max_clients} clients"
        + (f", up to {new} of them new (silent since CONNACK)" if new else "")
        + (f"; keep-alive 0 given up after {idle:g} s of silence" if idle else "")
        + f"; topic names up to {params.max_topic_name_bytes} octets,"
        f" {params.max_topic_bytes_per_client} per client"
    )


async def server(args: argparse.Namespace) -> None:
    """The gateway on UDP args.host:args.port, for the broker at args.broker."""
    broker_host, broker_port = broker_address(args.broker or DEFAULT_BROKER)
    params = gateway_params(args)

    def ready(driver: GatewayDriver) -> None:
        host, port = gateway_address(driver)
        shown = f"[{host}]" if ":" in host else host
        lines = [
            f"iotbench: MQTT-SN gateway listening on mqttsn://{shown}:{port} (UDP), "
            f"for the MQTT broker at {broker_host}:{broker_port}"
        ]
        lines += [
            f"  predefined topic {i:>5}  {name}" for i, name in params.predefined_topics.items()
        ]
        lines.append(describe_bounds(params))
        print("\n".join(lines), file=sys.stderr, flush=True)

    try:
        await serve_mqttsn_gateway(
            args.host, args.port, broker_host, broker_port, params=params, on_ready=ready
        )
    except RealModeError as exc:  # the UDP port cannot be bound
        raise UserError(str(exc)) from None


def client(args: argparse.Namespace) -> int:
    action = args.method.lower()
    if action not in ACTIONS:
        raise UserError(f"MQTT-SN action {args.method!r} is not one of pub, sub")
    try:
        target = parse_mqttsn_uri(args.uri)
    except RealModeError as exc:
        raise UserError(str(exc)) from None
    topic: str | int = target.topic
    id_type = None
    if args.topic_id is not None:
        topic, id_type = args.topic_id, TopicIdType.PREDEFINED
    elif not topic:
        raise UserError(f"{args.uri}: no topic after the host (or give --topic-id N)")
    check_pub_sub(args, action)
    if action == "sub" and args.qos == -1:
        raise UserError("--qos -1 applies to pub, not sub")
    qos = 0 if args.qos is None else args.qos
    if action == "pub":
        work = mqttsn_publish(
            target.host,
            target.port,
            topic,
            (args.payload or "").encode("utf-8"),
            qos=qos,
            retain=args.retain,
            count=1 if args.count is None else args.count,
            topic_id_type=id_type,
            timeout_s=args.timeout,
        )
    else:
        work = mqttsn_subscribe(
            target.host,
            target.port,
            topic,
            qos=qos,
            count=args.count or 0,
            topic_id_type=id_type,
            timeout_s=args.timeout,
            on_message=_show,
        )
    return run_pub_sub(action, qos, args.count, work)


def _show(msg: MessageReceived) -> None:
    """The payload on stdout (one line), what it was on stderr, like `client mqtt`."""
    print(f"{msg.topic or msg.topic_id}: QoS {msg.qos}, {len(msg.payload)} bytes", file=sys.stderr)
    text = msg.payload.decode("utf-8", errors="replace")
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    sys.stdout.flush()
