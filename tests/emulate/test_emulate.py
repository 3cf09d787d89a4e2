"""`iotbench emulate` end to end: real programs in network namespaces talk across
simulated networks in real time (radio meshes with RPL, lossy links), and the
namespaces go however the emulation ends.

These run real time (10 to 25 s each) and need root, namespaces and TUN, as CI
has; the programs are peers we did not write (aiocoap, mosquitto, paho-mqtt).
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iotbench.emulate.session import Emulation, EmulationOptions, EmulationReport
from iotbench.scenarios import expand, load_scenario
from iotbench.scenarios.settings import run_settings
from iotbench.world import run_one

pytestmark = [pytest.mark.usefixtures("require_root"), pytest.mark.timeout(180)]

PROGRAMS = Path(__file__).parent / "programs"
IP = "/usr/sbin/ip"
PREFIX = "ibt"  # the tests' namespaces: ibtn0, ibtclient, ...

LINE = """\
name = "line"
description = "NODES nodes 32 m apart in a line at -7 dBm: one hop per neighbour, RPL from n0"
seed = 1
max_sim_time_s = 100000.0
[network]
topology = "line"
[network.nodes]
count = NODES
spacing_m = 32.0
[network.roles]
producers = ["PRODUCER"]
[network.radio]
channel = 26
tx_power_dbm = -7.0
[network.routing]
protocol = "rpl"
[workload]
kind = "sequential"
items = ITEMS
resource = "voltage"
path = "/t"
start_s = 60.0
[protocol]
name = "coap"
[protocol.coap]
type = "con"
"""

LOSSY_PAIR = """\
name = "lossy"
description = "a pair link losing 10 % of packets each way"
seed = 4
max_sim_time_s = 100000.0
[network]
ip_version = 6
[network.link]
rate_bps = 1000000
delay_s = 0.01
mtu_bytes = 1280
[network.impair.both.loss]
model = "bernoulli"
p = 0.1
[workload]
kind = "sequential"
items = ITEMS
resource = "voltage"
path = "/t"
[protocol]
name = "coap"
"""


@pytest.fixture(autouse=True)
def no_test_namespaces():
    """The tests' namespaces (PREFIX...) neither before nor after a test: a test
    that failed half-way, or was killed, leaves none for the next."""

    def sweep() -> None:
        for line in namespaces().splitlines():
            name = line.split()[0] if line.strip() else ""
            if name.startswith(PREFIX):
                subprocess.run([IP, "netns", "del", name], capture_output=True)

    sweep()
    yield
    sweep()


def scenario(tmp_path: Path, text: str, **values: object) -> Path:
    for key, value in values.items():
        text = text.replace(key, str(value))
    path = tmp_path / "scenario.toml"
    path.write_text(text)
    return path


def emulation(path: Path, tmp_path: Path, **options: object) -> Emulation:
    run = expand(load_scenario(str(path)), {}, {}, reps=1)[0]
    opts = EmulationOptions(
        state_dir=tmp_path / "state",
        netns_prefix=PREFIX,
        **options,  # type: ignore[arg-type]
    )
    return Emulation(run_settings(run.config), run.seed, opts)


def in_namespace(node: str, *argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [IP, "netns", "exec", PREFIX + node, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def address(emu: Emulation, node: str) -> str:
    from iotbench.net import ip

    return ip.address_text(emu.world.net.hosts[node].address)  # type: ignore[union-attr]


def wait_ready(proc: subprocess.Popen[str]) -> None:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip() == "ready", proc.stderr.read() if proc.stderr else line


def namespaces() -> str:
    return subprocess.run([IP, "netns", "list"], capture_output=True, text=True).stdout


def finish(proc: subprocess.Popen[str]) -> str:
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    assert proc.returncode in (0, -signal.SIGTERM, -signal.SIGKILL), err
    return out


def coap_round_trips(
    emu: Emulation, server: str, client: str, count: int, size: int
) -> tuple[EmulationReport, list[float]]:
    """aiocoap's server on `server`, its client on `client`: the client's round trips."""
    procs: dict[str, subprocess.Popen[str]] = {}

    def attached(_names: list[str]) -> None:
        procs["server"] = in_namespace(
            server, sys.executable, str(PROGRAMS / "coap_server.py"), "::", str(size)
        )
        wait_ready(procs["server"])
        procs["client"] = in_namespace(
            client,
            sys.executable,
            str(PROGRAMS / "coap_client.py"),
            address(emu, server),
            str(count),
        )

    report = emu.run(out=open(os.devnull, "w"), on_attached=attached)  # noqa: SIM115
    procs["server"].terminate()
    finish(procs["server"])
    lines = finish(procs["client"]).split()
    sizes, rtts = lines[0::2], [float(x) for x in lines[1::2]]
    assert sizes == [str(size)] * count
    return report, rtts


def test_aiocoap_across_four_radio_hops(tmp_path, require_peer):
    tshark = require_peer("tshark")
    path = scenario(tmp_path, LINE, NODES=8, ITEMS=1, PRODUCER="n7")
    pcap = tmp_path / "air.pcap"
    emu = emulation(path, tmp_path, attach=["n0", "n7"], duration_s=15.0, pcap_path=str(pcap))
    report, rtts = coap_round_trips(emu, "n0", "n7", count=5, size=20)
    assert len(rtts) == 5
    # Four hops each way, every one 802.15.4 at 250 kbit/s: far from loopback.
    assert min(rtts) > 8.0
    assert report.hosts["n7"].from_host >= 5 and report.hosts["n0"].to_host >= 5
    assert PREFIX + "n0" not in namespaces()
    # Everything on the air in one capture: RPL's frames and the hosts' CoAP,
    # decoded by Wireshark down to CoAP, none of it malformed.
    base = [tshark, "-n", "-r", str(pcap), "-o", "6lowpan.context0:fd00::/64"]
    frames = subprocess.run(
        [*base, "-Y", "coap", "-T", "fields", "-e", "coap.code", "-e", "ipv6.hlim"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.splitlines()
    gets = [int(hlim) for code, hlim in (f.split("\t") for f in frames) if code == "1"]
    # Each GET crosses four hops or more: a frame per hop (more with MAC
    # retries), the last one sent by the third forwarder or a later one.
    assert len(gets) >= 5 * 4 and min(gets) <= 64 - 3
    flagged = subprocess.run(
        [*base, "-Y", "_ws.malformed || _ws.expert.severity == error"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert flagged == ""


def test_a_real_round_trip_matches_the_simulated_one_on_the_same_path(tmp_path):
    """aiocoap's GET across four hops or more against our stack's GET on the same
    network, seed and path (from the gateway n0 to the sensor n7), medians. The
    real one adds what the simulation leaves out: the two hosts' kernels and
    Python, and the emulation's lag (docs/emulate.md)."""
    path = scenario(tmp_path, LINE, NODES=8, ITEMS=20, PRODUCER="n7")
    run = expand(load_scenario(str(path)), {}, {}, reps=1)[0]
    config = {**run.config, "workload": {**run.config["workload"]}}
    simulated = run_one(config, run.seed).metrics
    sim_ms = float(simulated["latency_p50_s"]) * 1e3
    emu = emulation(path, tmp_path, attach=["n0", "n7"], duration_s=20.0)
    _report, rtts = coap_round_trips(emu, "n7", "n0", count=20, size=6)
    real_ms = statistics.median(rtts)
    print(f"round trip n0-n7: real {real_ms:.2f} ms, simulated {sim_ms:.2f} ms")
    assert abs(real_ms - sim_ms) <= 0.2 * sim_ms, (real_ms, sim_ms)


def test_mosquitto_and_paho_over_tcp_across_a_lossy_link(tmp_path, require_peer):
    mosquitto = require_peer("mosquitto")
    conf = tmp_path / "mosquitto.conf"
    conf.write_text("listener 1883 ::\nallow_anonymous true\n")
    path = scenario(tmp_path, LOSSY_PAIR, ITEMS=1)
    emu = emulation(path, tmp_path, attach=["client", "server"], duration_s=25.0)
    procs: dict[str, subprocess.Popen[str]] = {}

    def attached(_names: list[str]) -> None:
        procs["broker"] = in_namespace("server", mosquitto, "-c", str(conf))
        time.sleep(0.5)
        procs["client"] = in_namespace(
            "client",
            sys.executable,
            str(PROGRAMS / "mqtt_roundtrip.py"),
            address(emu, "server"),
            "20",
            "20",
        )

    report = emu.run(out=open(os.devnull, "w"), on_attached=attached)  # noqa: SIM115
    procs["broker"].terminate()
    finish(procs["broker"])
    assert finish(procs["client"]).strip() == "20"
    # Every message crossed the link twice, in TCP segments the kernels sent.
    assert report.hosts["client"].from_host >= 5 and report.hosts["client"].to_host >= 5


def test_our_simulated_coap_client_against_a_real_server(tmp_path):
    path = scenario(tmp_path, LOSSY_PAIR, ITEMS=10)
    emu = emulation(path, tmp_path, attach=["server"], duration_s=12.0, workload=True, warmup_s=0.0)
    procs: dict[str, subprocess.Popen[str]] = {}

    def attached(_names: list[str]) -> None:
        procs["server"] = in_namespace(
            "server", sys.executable, str(PROGRAMS / "coap_server.py"), "::", "12"
        )
        wait_ready(procs["server"])

    report = emu.run(out=open(os.devnull, "w"), on_attached=attached)  # noqa: SIM115
    procs["server"].terminate()
    finish(procs["server"])
    assert report.items is not None
    assert report.items.started == 10 and report.items.delivered == 10


def cli(*args: str, state: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "IOTBENCH_EMULATE_STATE": str(state / "state")}
    return subprocess.Popen(
        [sys.executable, "-m", "iotbench", "emulate", *args, "--netns-prefix", PREFIX],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def wait_attached(proc: subprocess.Popen[str]) -> None:
    assert proc.stderr is not None
    for line in proc.stderr:
        if "attached" in line:
            return
    raise AssertionError("the emulation ended before attaching")


@pytest.mark.parametrize("ending", ["duration", "sigint", "sigterm"])
def test_the_namespaces_go_however_the_emulation_ends(tmp_path, ending):
    path = scenario(tmp_path, LOSSY_PAIR, ITEMS=1)
    extra = ["--duration", "2"] if ending == "duration" else []
    proc = cli(str(path), "--attach", "client", *extra, state=tmp_path)
    wait_attached(proc)
    assert PREFIX + "client" in namespaces()
    if ending == "sigint":
        proc.send_signal(signal.SIGINT)
    elif ending == "sigterm":
        proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "lag p50" in err
    assert PREFIX + "client" not in namespaces()


def test_a_later_start_removes_what_a_killed_run_left(tmp_path):
    path = scenario(tmp_path, LOSSY_PAIR, ITEMS=1)
    proc = cli(str(path), "--attach", "client", state=tmp_path)
    wait_attached(proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert PREFIX + "client" in namespaces()
    again = cli(str(path), "--attach", "client", "--duration", "1", state=tmp_path)
    _out, err = again.communicate(timeout=30)
    assert again.returncode == 0, err
    assert "removed namespaces a stopped run left: ibtclient" in err
    assert PREFIX + "client" not in namespaces()


def test_bad_input_is_one_clear_error(tmp_path):
    path = scenario(tmp_path, LOSSY_PAIR, ITEMS=1)
    proc = cli(str(path), "--attach", "n9", "--duration", "1", state=tmp_path)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert "--attach n9: the network has no node of that name; its nodes: client, server" in err
    assert "Traceback" not in err


def test_a_zep_peer_plays_a_node_of_the_mesh(tmp_path):
    """A RIOT process's side, written here: it registers with a hello carrying its
    EUI-64, and hears its neighbours' RPL broadcasts as ZEP frames from our
    medium while the emulation runs (RIOT's own run is a documented check)."""
    import socket
    import threading

    from iotbench.emulate.zep import decode_zep, encode_hello

    path = scenario(tmp_path, LINE, NODES=4, ITEMS=1, PRODUCER="n3")
    peer = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    peer.bind(("::1", 0))
    peer.settimeout(0.5)
    probe = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    probe.bind(("::1", 0))
    port = probe.getsockname()[1]
    probe.close()
    emu = emulation(
        path,
        tmp_path,
        attach=[],
        duration_s=8.0,
        zep=("::1", port),
        zep_nodes=["n2"],
        warmup_s=30.0,
    )
    radio = emu.world.net.radios["n2"]  # type: ignore[attr-defined]
    heard: list[bytes] = []

    def riot() -> None:
        peer.sendto(encode_hello(radio.address), ("::1", port))
        deadline = time.monotonic() + 7.0
        while time.monotonic() < deadline:
            try:
                data, _ = peer.recvfrom(2048)
            except TimeoutError:
                continue
            heard.append(decode_zep(data).psdu)  # type: ignore[union-attr]

    thread = threading.Thread(target=riot)

    def attached(_names: list[str]) -> None:
        thread.start()

    report = emu.run(out=open(os.devnull, "w"), on_attached=attached)  # noqa: SIM115
    thread.join(10)
    peer.close()
    assert report.zep is not None and report.zep.registered == 1 and report.zep.hellos == 1
    assert heard and report.zep.frames_out == len(heard)


ECHO = """
import socket, sys
family = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
s = socket.socket(family, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 7777)); s.settimeout(15)
print("ready", flush=True)
data, addr = s.recvfrom(2048); s.sendto(data, addr)
"""

ASK = """
import socket, sys
family = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
s = socket.socket(family, socket.SOCK_DGRAM); s.settimeout(10)
s.sendto(b"over IPv4", (sys.argv[1], 7777)); print(s.recv(2048).decode())
"""


def test_an_ipv4_network_gives_its_hosts_ipv4(tmp_path):
    text = LOSSY_PAIR.replace("ip_version = 6", "ip_version = 4").replace("p = 0.1", "p = 0.0")
    path = scenario(tmp_path, text, ITEMS=1)
    emu = emulation(path, tmp_path, attach=["client", "server"], duration_s=6.0)
    procs: dict[str, subprocess.Popen[str]] = {}

    def attached(_names: list[str]) -> None:
        server = address(emu, "server")
        assert server.count(".") == 3
        procs["echo"] = in_namespace("server", sys.executable, "-c", ECHO, server)
        wait_ready(procs["echo"])
        procs["ask"] = in_namespace("client", sys.executable, "-c", ASK, server)

    emu.run(out=open(os.devnull, "w"), on_attached=attached)  # noqa: SIM115
    finish(procs["echo"])
    assert finish(procs["ask"]).strip() == "over IPv4"
