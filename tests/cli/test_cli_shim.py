"""`iotbench shim`: help, user errors, and CoAP through the shim as a user would run it."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from cli_servers import start_listening

from iotbench import cli

SHIM = ["shim", "--listen", "127.0.0.1:0", "--to", "127.0.0.1:9"]


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_help_explains_the_shim_with_examples(capsys):
    with pytest.raises(SystemExit):
        cli.main(["shim", "--help"])
    out = capsys.readouterr().out
    assert "--scenario s3-robustness --filter condition=loss-10" in out
    assert "--network" in out and "--pcap" in out and "examples:" in out


@pytest.fixture
def lossy_toml(tmp_path: Path) -> Path:
    path = tmp_path / "lossy.toml"
    path.write_text(
        "[network.link]\nrate_bps = 250000\ndelay_s = 0.005\n"
        '[network.impair.to_server.loss]\nmodel = "bernoulli"\np = 0.05\n'
    )
    return path


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "net.toml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (SHIM, "give the network to impose: --scenario NAME|FILE or --network FILE"),
        ([*SHIM, "--scenario", "s3-robustness", "--network", "x.toml"], "give the network"),
        (["shim", "--listen", "nowhere", "--to", "127.0.0.1:9"], "--listen 'nowhere': expected"),
        (["shim", "--listen", "127.0.0.1:0", "--to", "h:99999"], "--to 'h:99999': expected"),
        ([*SHIM, "--scenario", "s3-robustness"], "have 9 different networks; pick one with"),
        ([*SHIM, "--scenario", "s3-robustnes"], "unknown scenario 's3-robustnes'"),
        ([*SHIM, "--scenario", "s5-ndn-rtt"], "not through a radio network"),
        (
            [*SHIM, "--scenario", "s3-robustness", "--filter", "condition=base"]
            + ["--set", "workload.items=5"],
            "--set workload.items: the shim takes only network.* keys",
        ),
        (
            [*SHIM, "--scenario", "s3-robustness", "--filter", "condition=base"]
            + ["--set", "network.link.mtu_bytes=20"],
            "network.link.mtu_bytes: 20 is out of range",
        ),
        ([*SHIM, "--network", "missing.toml"], "missing.toml: no such file"),
    ],
)
def test_user_errors_are_one_line_and_exit_2(capsys, args, message):
    code, _, err = run_cli(capsys, *args)
    assert code == 2 and err.startswith("iotbench: error: ") and message in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("text", "extra", "message"),
    [
        ("[link]\n", [], "no [network] table"),
        ("[network\n", [], "invalid TOML"),
        ("[network.link]\nrate = 1\n", [], "network.link.rate: unknown key 'rate'"),
        (
            '[network.impair.both.loss]\nmodel = "bernouli"\n',
            [],
            "network.impair.both.loss.model: 'bernouli' is not one of",
        ),
        (
            '[network.impair.both.outages]\nmodel = "random-items"\ncount = 2\nduration_s = 1.0\n',
            [],
            "random-items outages choose among a number of items: give --items N",
        ),
        ("[network]\n", ["--filter", "a=b"], "--filter selects runs of a --scenario"),
        ("[network]\n", ["--set", "network.link.delay_s=-1"], "network.link.delay_s: -1"),
        (
            '[network.link]\nlayer = "ieee802154"\nmtu_bytes = 100\n',
            [],
            "the shim relays UDP over IP links only",
        ),
        ('[network]\ntopology = "line"\n', [], "not through a radio network"),
    ],
)
def test_network_file_errors_name_the_file_and_key(capsys, tmp_path, text, extra, message):
    path = write(tmp_path, text)
    code, _, err = run_cli(capsys, *SHIM, "--network", path, *extra)
    assert code == 2 and message in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_listen_on_a_port_in_use_is_a_clear_error(capsys, lossy_toml):
    with socket.socket(type=socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        args = ["shim", "--listen", f"127.0.0.1:{port}", "--to", "127.0.0.1:9"]
        code, _, err = run_cli(capsys, *args, "--network", str(lossy_toml))
    assert code == 2 and f"cannot listen on UDP 127.0.0.1 port {port}" in err


def coap_through_the_shim(tmp_path: Path, *shim_args: str) -> tuple[list, str, Path]:
    """`serve coap`, `shim` in front of it, three `client coap` GETs through the shim;
    (client results, the shim's stderr, its pcap)."""
    pcap = tmp_path / "shim.pcap"
    iotbench = [sys.executable, "-m", "iotbench"]
    server, server_port, _ = start_listening(
        "serve", "coap", "--port", "0", banner="listening on coap://"
    )
    shim = None
    try:
        shim, shim_port, banner = start_listening(
            *("shim", "--listen", "127.0.0.1:0", "--to", f"127.0.0.1:{server_port}"),
            *("--pcap", str(pcap), *shim_args),
            banner="shim listening on UDP 127.0.0.1:",
        )
        # what it imposes: listening, where the network is from, the link, one impairment
        assert shim.stderr is not None
        banner += "".join(shim.stderr.readline() for _ in range(3))
        results = [
            subprocess.run(
                [*iotbench, "client", "coap", "GET", f"coap://127.0.0.1:{shim_port}/voltage"]
                + ["--timeout", "60"],
                capture_output=True,
                text=True,
                timeout=120,
            )
            for _ in range(3)
        ]
    finally:
        if shim is not None:
            shim.send_signal(signal.SIGTERM)
            _, shim_err = shim.communicate(timeout=30)
        server.terminate()
        server.communicate(timeout=30)
    return results, banner + shim_err, pcap


def test_coap_through_the_shim_as_a_user_would(tmp_path, lossy_toml):
    results, err, pcap = coap_through_the_shim(tmp_path, "--network", str(lossy_toml))
    for done in results:
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip().endswith(" V")  # e.g. "49.5 V"
    assert "Traceback" not in err and "iotbench: shim stopped" in err
    assert 'to_server.loss: {model = "bernoulli", p = 0.05}' in err
    assert "link client->server packets: delivered" in err
    assert pcap.stat().st_size > 24 + 3 * (16 + 28)  # the header and at least the GETs
