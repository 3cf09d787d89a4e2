"""`iotbench serve mqttsn-gateway` and `iotbench client mqttsn`: help, user errors, and a
real round trip through our gateway and our broker, each its own process, as a user
would run them."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest
from cli_servers import start_listening

from iotbench import cli


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_help_explains_mqttsn_with_examples(capsys):
    with pytest.raises(SystemExit):
        cli.main(["serve", "--help"])
    out = capsys.readouterr().out
    assert "mqttsn-gateway" in out and "--broker" in out and "--predefined-topic" in out
    assert "iotbench serve mqttsn-gateway --port 1884 --broker 127.0.0.1:1883" in out
    with pytest.raises(SystemExit):
        cli.main(["client", "--help"])
    out = capsys.readouterr().out
    assert "mqttsn://" in out and "--topic-id" in out and "--qos -1" in out


SN = "mqttsn://127.0.0.1:9/a"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["client", "mqttsn", "get", SN], "MQTT-SN action 'get' is not one of"),
        (["client", "mqttsn", "pub", "mqtt://127.0.0.1/a"], "scheme 'mqtt' is not mqttsn"),
        (["client", "mqttsn", "pub", "mqttsn://127.0.0.1:9"], "no topic after the host"),
        (["client", "mqttsn", "sub", SN, "--retain"], "--retain applies to pub"),
        (["client", "mqttsn", "sub", SN, "--qos", "-1"], "--qos -1 applies to pub"),
        (["client", "mqttsn", "pub", SN, "--count", "0"], "--count must be at least 1"),
        (["client", "mqttsn", "pub", SN, "--observe", "1"], "option of CoAP; MQTT-SN does not"),
        (["client", "mqtt", "pub", "mqtt://h/a", "--topic-id", "7"], "option of MQTT-SN; MQTT"),
        (["client", "mqtt", "pub", "mqtt://h/a", "--qos", "-1"], "--qos -1 is MQTT-SN's"),
        (["client", "coap", "GET", "coap://h/a", "--topic-id", "7"], "option of MQTT-SN; CoAP"),
        (["serve", "mqtt", "--broker", "h:1"], "--broker is an option of serve mqttsn-gateway"),
        (["serve", "coap", "--predefined-topic", "7=a"], "option of serve mqttsn-gateway"),
        (["serve", "mqttsn-gateway", "--prefix", "/a"], "--prefix is an option of serve ndn"),
        (["serve", "mqttsn-gateway", "--port", "0", "--broker", "h:x"], "expected HOST:PORT"),
        (["serve", "mqttsn-gateway", "--port", "0", "--predefined-topic", "7"], "ID=TOPIC"),
        (
            ["serve", "mqttsn-gateway", "--port", "0", "--predefined-topic", "0=a"],
            "topic ids 1..65534",
        ),
        (
            ["serve", "mqttsn-gateway", "--port", "0", "--predefined-topic", "7=a/#"],
            "without wildcards",
        ),
        (
            ["serve", "mqttsn-gateway", "--port", "0"]
            + ["--predefined-topic", "7=a", "--predefined-topic", "7=b"],
            "topic id 7 given twice",
        ),
    ],
)
def test_user_errors_are_one_line_and_exit_2(capsys, args, message):
    code, _, err = run_cli(capsys, *args)
    assert code == 2 and err.startswith("iotbench: error: ") and message in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_serve_on_a_port_in_use_is_a_clear_error(capsys):
    with socket.socket(type=socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        code, _, err = run_cli(capsys, "serve", "mqttsn-gateway", "--port", str(port))
    assert code == 2
    assert f"iotbench: error: cannot listen on UDP 127.0.0.1 port {port}:" in err


def test_no_gateway_is_a_failure_not_a_traceback(capsys):
    with socket.socket(type=socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))  # bound and silent: nobody answers the CONNECT
        port = s.getsockname()[1]
        code, _, err = run_cli(
            capsys, "client", "mqttsn", "pub", f"mqttsn://127.0.0.1:{port}/a", "--timeout", "1"
        )
    # One line that says what happened, and nothing else.
    assert code == 1 and "Traceback" not in err
    assert err.splitlines() == [
        f"iotbench: published 0 of 1 message(s), QoS 0: timeout: no CONNACK from the gateway "
        f"at 127.0.0.1:{port}"
    ]


def test_nothing_listening_fails_at_once(capsys):
    port = _free_port(socket.SOCK_DGRAM)
    for action in ("pub", "sub"):
        code, _, err = run_cli(
            capsys, "client", "mqttsn", action, f"mqttsn://127.0.0.1:{port}/a", "--timeout", "60"
        )
        verb = "published 0 of 1" if action == "pub" else "received 0"
        assert code == 1
        assert err.strip().startswith(f"iotbench: {verb} message(s)")
        assert err.strip().endswith(f"127.0.0.1 port {port} is unreachable: Connection refused")


def _free_port(kind: int) -> int:
    with socket.socket(type=kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_gateway_and_broker_as_a_user_would_run_them():
    """An MQTT-SN subscriber and publishers (by name, by predefined id, QoS -1), all through
    `serve mqttsn-gateway` to `serve mqtt`."""
    broker, broker_port, _ = start_listening(
        "serve", "mqtt", "--port", "0", banner="listening on mqtt://"
    )
    gateway = None
    try:
        gateway, gateway_port, _ = start_listening(
            "serve", "mqttsn-gateway", "--port", "0",
            "--broker", f"127.0.0.1:{broker_port}", "--predefined-topic", "7=s/seven",
            banner="MQTT-SN gateway listening on mqttsn://127.0.0.1:",
        )  # fmt: skip
        assert gateway.stderr is not None
        assert "predefined topic     7  s/seven" in gateway.stderr.readline()
        base = f"mqttsn://127.0.0.1:{gateway_port}"
        client = [sys.executable, "-m", "iotbench", "client", "mqttsn"]
        sub = subprocess.Popen(
            [*client, "sub", f"{base}/s/%23", "--qos", "1", "--count", "3", "--timeout", "60"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        publishes = [
            ["pub", f"{base}/s/t", "--payload", "by-name", "--qos", "1"],
            ["pub", base, "--topic-id", "7", "--payload", "by-id", "--qos", "1"],
            ["pub", base, "--topic-id", "7", "--payload", "no-connection", "--qos", "-1"],
        ]
        for _ in range(200):  # until the subscription is in place and all three arrived
            for publish in publishes:
                done = subprocess.run(
                    [*client, *publish], capture_output=True, text=True, timeout=30
                )
                assert done.returncode == 0, done.stderr
            if sub.poll() is not None:
                break
            time.sleep(0.1)
        out, err = sub.communicate(timeout=30)
        assert sub.returncode == 0, err
        assert set(out.split()) <= {"by-name", "by-id", "no-connection"} and len(out.split()) == 3
        assert "received 3 message(s)" in err
    finally:
        for process in (gateway, broker):
            if process is not None:
                process.terminate()
                _, err = process.communicate(timeout=10)
                assert "Traceback" not in err and "server stopped" in err
