"""`iotbench serve mqtt` and `iotbench client mqtt`: help, user errors, a real round trip."""

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


def test_help_explains_mqtt_with_examples(capsys):
    for command in ("serve", "client"):
        with pytest.raises(SystemExit):
            cli.main([command, "--help"])
        out = capsys.readouterr().out
        assert "mqtt" in out and "examples:" in out
    with pytest.raises(SystemExit):
        cli.main(["client", "--help"])
    out = capsys.readouterr().out
    assert "iotbench client mqtt sub 'mqtt://127.0.0.1/sensors/%23'" in out
    assert "--qos" in out and "--retain" in out and "--count" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["client", "mqtt", "get", "mqtt://127.0.0.1/a"], "MQTT action 'get' is not one of"),
        (["client", "mqtt", "pub", "coap://127.0.0.1/a"], "scheme 'coap' is not mqtt"),
        (["client", "mqtt", "pub", "mqtt://127.0.0.1/a/#"], "wildcards are for subscribing"),
        (["client", "mqtt", "pub", "mqtt://127.0.0.1/"], "no topic"),
        (["client", "mqtt", "sub", "mqtt://127.0.0.1/a%23"], "not a valid topic filter"),
        (["client", "mqtt", "sub", "mqtt://127.0.0.1/a", "--retain"], "--retain applies to pub"),
        (["client", "mqtt", "sub", "mqtt://127.0.0.1/a", "--payload", "x"], "--payload applies"),
        (["client", "mqtt", "pub", "mqtt://127.0.0.1/a", "--count", "0"], "--count must be"),
        (["client", "mqtt", "pub", "mqtt://127.0.0.1/a", "--observe", "1"], "option of CoAP"),
        (["client", "mqtt", "pub", "mqtt://127.0.0.1/a", "--non"], "option of CoAP"),
        (["client", "coap", "GET", "coap://127.0.0.1/a", "--qos", "1"], "option of MQTT"),
        (["client", "coap", "GET", "coap://127.0.0.1/a", "--retain"], "option of MQTT"),
    ],
)
def test_user_errors_are_one_line_and_exit_2(capsys, args, message):
    code, _, err = run_cli(capsys, *args)
    assert code == 2 and err.startswith("iotbench: error: ") and message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_connection_refused_is_a_clear_error(capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))  # bound, not listening
        port = s.getsockname()[1]
        code, _, err = run_cli(capsys, "client", "mqtt", "pub", f"mqtt://127.0.0.1:{port}/a")
    assert code == 1 and "Traceback" not in err
    assert err.splitlines() == [
        f"iotbench: published 0 of 1 message(s), QoS 0: 127.0.0.1 port {port} is unreachable: "
        "Connection refused"
    ]


def test_bad_qos_is_an_argument_error(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["client", "mqtt", "pub", "mqtt://h/a", "--qos", "3"])
    assert info.value.code == 2


def test_serve_on_a_port_in_use_is_a_clear_error(capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        code, _, err = run_cli(capsys, "serve", "mqtt", "--port", str(port))
    assert code == 2
    assert f"iotbench: error: cannot serve MQTT on 127.0.0.1 port {port}:" in err


def test_serve_pub_sub_as_a_user_would():
    server, port, _ = start_listening("serve", "mqtt", "--port", "0", banner="listening on mqtt://")
    try:
        base = f"mqtt://127.0.0.1:{port}"
        client = [sys.executable, "-m", "iotbench", "client", "mqtt"]
        sub = subprocess.Popen(
            [*client, "sub", f"{base}/s/%23", "--qos", "2", "--count", "2", "--timeout", "30"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        out = ""
        for _ in range(600):  # until the subscription is in place: a retained probe arrives
            done = subprocess.run(
                [*client, "pub", f"{base}/s/ready", "--payload", "ready", "--retain"],
                capture_output=True,
                text=True,
                timeout=30,
            )
            assert done.returncode == 0, done.stderr
            if sub.poll() is not None:
                break
            time.sleep(0.05)
            pub = subprocess.run(
                [*client, "pub", f"{base}/s/t", "--payload", "21.5", "--qos", "2"],
                capture_output=True,
                text=True,
                timeout=30,
            )
            assert pub.returncode == 0, pub.stderr
            if sub.poll() is not None:
                break
        out, err = sub.communicate(timeout=30)
        assert sub.returncode == 0, err
        assert set(out.split()) <= {"ready", "21.5"} and len(out.split()) == 2
    finally:
        server.terminate()
        _, err = server.communicate(timeout=10)
    assert "Traceback" not in err and "MQTT server stopped" in err
