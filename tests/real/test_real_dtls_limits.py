"""`serve coap` and `serve coap-em`: --dtls-max-sessions and --dtls-max-handshakes
reach the server's DTLS layer (the limits themselves: tests/proto/dtls/test_dtls_limits.py)."""

from __future__ import annotations

import random

import pytest

from iotbench import cli
from iotbench.proto.dtls.params import DtlsParams
from iotbench.real import cli as real_cli


def test_the_options_reach_the_servers_dtls_layer(monkeypatch, capsys) -> None:
    seen = {}

    async def fake_serve_coap(host, port, *, security, **_):
        seen["layer"] = security(random.Random(1))

    monkeypatch.setattr(real_cli, "serve_coap", fake_serve_coap)
    argv = ["serve", "coap", "--psk-identity", "dev1", "--psk-key", "s3cret", "--port", "0"]
    assert cli.main([*argv, "--dtls-max-sessions", "3", "--dtls-max-handshakes", "5"]) == 0
    params = seen["layer"].params
    assert (params.max_sessions, params.max_handshakes) == (3, 5)
    assert cli.main([*argv, "--dtls-max-handshakes", "7"]) == 0
    defaults = DtlsParams()
    assert seen["layer"].params == DtlsParams(max_handshakes=7)
    assert seen["layer"].params.max_sessions == defaults.max_sessions


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["serve", "http", "--dtls-max-sessions", "3"],
            "an option of serve coap and serve coap-em",
        ),
        (["serve", "coap", "--dtls-max-handshakes", "3"], "bounds DTLS: add --psk-identity"),
    ],
)
def test_misplaced_options_are_clear_errors(capsys, argv, message) -> None:
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err


def test_a_limit_of_zero_is_refused(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(
            ["serve", "coap", "--psk-identity", "a", "--psk-key", "b", "--dtls-max-sessions", "0"]
        )
    assert info.value.code == 2
