"""Wireshark's dissectors (tshark) read the captures of radio networks.

Every frame must decode as IEEE 802.15.4 (FCS good), data frames down through
6LoWPAN (uncompressed or IPHC, whole or fragmented), IPv6 and UDP (checksums
verified) to CoAP or MQTT-SN, and no frame may be flagged malformed or with
an expert error. A network with an uplink writes pcapng with both media.
"""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import pytest

from iotbench.scenarios import expand, parse_scenario
from iotbench.world import run_one

pytestmark = pytest.mark.interop

SCENARIO = """
name = "radio-capture"
description = "a small radio network to capture"
[network]
topology = "line"
[network.nodes]
count = 4
spacing_m = 40.0
[network.roles]
producers = ["n3"]
[network.routing]
protocol = "static"
[workload]
kind = "sequential"
items = 6
resource = "{resource}"
object_size_bytes = 300
path = "/o"
[protocol]
name = "{protocol}"
"""


def capture(tmp_path: Path, protocol: str, extra: str = "", resource: str = "voltage", **sets):
    text = SCENARIO.format(protocol=protocol, resource=resource) + extra
    (run,) = expand(parse_scenario(text), {}, sets)
    pcap = tmp_path / f"{protocol}.pcap"
    metrics = run_one(run.config, run.seed, pcap_path=str(pcap)).metrics
    return pcap, metrics


# IPHC elides the radio network's prefix as context 0 (docs/sixlowpan-rpl.md):
# Wireshark must be told the context to rebuild the addresses, as a user would.
CONTEXT = ("-o", "6lowpan.context0:fd00::/64")


def tshark(exe: str, pcap: Path, *args: str) -> str:
    done = subprocess.run(
        [exe, "-n", "-r", str(pcap), "-o", "udp.check_checksum:TRUE", *CONTEXT, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def fields(exe: str, pcap: Path, *names: str, decode: tuple[str, ...] = ()) -> list[list[str]]:
    args = [*decode, "-T", "fields", "-E", "separator=\t", "-E", "occurrence=f"]
    for name in names:
        args += ["-e", name]
    return [line.split("\t") for line in tshark(exe, pcap, *args).splitlines()]


def assert_clean(exe: str, pcap: Path, decode: tuple[str, ...] = ()) -> None:
    flagged = tshark(exe, pcap, *decode, "-Y", "_ws.malformed || _ws.expert.severity == error")
    assert flagged == "", f"tshark flags these frames:\n{flagged}"


@pytest.mark.parametrize("compression", ["none", "iphc"])
def test_coap_over_6lowpan_decodes_frame_by_frame(tmp_path, require_peer, compression):
    exe = require_peer("tshark")
    extra = f'\n[network.lowpan]\ncompression = "{compression}"\n'
    pcap, m = capture(tmp_path, "coap", extra)
    assert m["items_delivered"] == 6
    assert_clean(exe, pcap)
    rows = fields(
        exe,
        pcap,
        "wpan.frame_type",
        "wpan.fcs_ok",
        "ipv6.src",
        "ipv6.dst",
        "udp.dstport",
        "udp.checksum.status",
        "coap.code",
    )
    assert len(rows) == m["packets"]
    kinds = Counter(row[0] for row in rows)
    assert kinds == {"0x0001": m["packets_data"], "0x0002": m["packets_ack"]}
    assert {row[1] for row in rows} == {"1"}  # every FCS checked and good
    data = [row for row in rows if row[0] == "0x0001"]
    assert all(row[2].startswith("fd00::") and row[3].startswith("fd00::") for row in data)
    assert {row[5] for row in data} == {"1"}  # UDP checksum verified: good
    codes = Counter(row[6] for row in data)
    assert codes["1"] >= 6 and codes["69"] >= 6  # GET and 2.05 Content, hop by hop


def test_fragmented_6lowpan_datagrams_reassemble(tmp_path, require_peer):
    """A 300-byte object does not fit a frame: FRAG1/FRAGN, reassembled by tshark."""
    exe = require_peer("tshark")
    pcap, m = capture(tmp_path, "coap", resource="object")
    assert m["items_delivered"] == 6
    assert_clean(exe, pcap)
    rows = fields(exe, pcap, "6lowpan.frag.size", "coap.code", "coap.payload_length")
    fragments = [row for row in rows if row[0]]
    assert fragments, "no 6LoWPAN fragments in the capture"
    assert {row[0] for row in fragments} == {"357"}  # IPv6 40 + UDP 8 + CoAP 9 + 300
    # tshark put the datagrams back together and found the 300-byte objects.
    assert [row[2] for row in rows if row[1] == "69"].count("300") >= 6


def test_mqttsn_over_6lowpan_decodes(tmp_path, require_peer):
    exe = require_peer("tshark")
    pcap, m = capture(tmp_path, "mqttsn")
    assert m["items_delivered"] == 6
    decode = ("-d", "udp.port==1883,mqttsn")
    assert_clean(exe, pcap, decode)
    types = Counter(row[0] for row in fields(exe, pcap, "mqttsn.msg.type", decode=decode) if row[0])
    # Per item (forwarded over the hops): CONNECT, CONNACK, REGISTER, REGACK,
    # PUBLISH, DISCONNECT and its answer.
    for message in ("0x04", "0x05", "0x0a", "0x0b", "0x0c", "0x18"):
        assert types[message] >= 6, types


# NDN goes straight into frames without a dispatch byte, and Wireshark's
# heuristic dissectors for 802.15.4 payloads would read an S5 fragment header
# (first bit 1) as a 6LoWPAN mesh header: a user turns them off (docs/ndn.md).
NO_HEURISTICS = tuple(
    arg
    for h in ("6lowpan_wlan", "zbee_nwk_wpan", "zbee_nwk_gp_wlan", "lwm_wlan")
    for arg in ("--disable-heuristic", h)
)


def test_ndn_frames_are_clean_802154(tmp_path, require_peer):
    """Wireshark has no NDN dissector built in: the frames must still be clean
    802.15.4 data frames, with NDN's TLV (or S5 fragments) as their payload."""
    exe = require_peer("tshark")
    pcap, m = capture(tmp_path, "ndn", resource="object")
    assert m["items_delivered"] == 6
    assert_clean(exe, pcap, NO_HEURISTICS)
    rows = fields(exe, pcap, "wpan.frame_type", "wpan.fcs_ok", "data.data", decode=NO_HEURISTICS)
    assert len(rows) == m["packets"]
    assert {row[1] for row in rows} == {"1"}
    payloads = [row[2] for row in rows if row[0] == "0x0001"]
    interests = [p for p in payloads if p[:2] == "05"]
    fragments = [p for p in payloads if int(p[:2], 16) & 0x80]  # the Data, in S5 fragments
    assert len(interests) >= 6 and len(fragments) >= 12
    assert len(interests) + len(fragments) == len(payloads)


def test_a_network_with_an_uplink_writes_pcapng_with_both_media(tmp_path, require_peer):
    exe = require_peer("tshark")
    extra = "\n[network.uplink]\n"
    pcap, m = capture(tmp_path, "coap", extra, **{"network.roles.client": "uplink"})
    assert m["items_delivered"] == 6
    assert_clean(exe, pcap)
    rows = fields(exe, pcap, "frame.interface_name", "ipv6.src", "coap.code")
    by_interface = Counter(row[0] for row in rows)
    assert set(by_interface) == {"802.15.4 channel 26", "uplink"}
    uplink = [row for row in rows if row[0] == "uplink"]
    assert {row[1] for row in uplink} >= {"fd01::2"}  # the client's requests
    assert sum(1 for row in uplink if row[2] == "1") == 6 and len(uplink) == 12


def test_rpl_control_messages_decode(tmp_path, require_peer):
    """DIS, DIO (with the DODAG Configuration option), DAO and DAO-ACK as ICMPv6
    type 155, checksums verified, among CoAP frames over the routes RPL built."""
    exe = require_peer("tshark")
    extra = '\n[network.routing]\nprotocol = "rpl"\n'
    text = SCENARIO.format(protocol="coap", resource="voltage").replace(
        '[network.routing]\nprotocol = "static"\n', ""
    )
    (run,) = expand(parse_scenario(text + extra), {}, {"workload.start_s": 60.0})
    pcap = tmp_path / "rpl.pcap"
    m = run_one(run.config, run.seed, pcap_path=str(pcap)).metrics
    assert m["items_delivered"] == 6
    assert_clean(exe, pcap)
    rows = fields(exe, pcap, "icmpv6.type", "icmpv6.code", "icmpv6.checksum.status", "coap.code")
    rpl = [row for row in rows if row[0] == "155"]
    codes = Counter(row[1] for row in rpl)
    assert codes["1"] == m["rpl_dio_sent"] and codes["2"] == m["rpl_dao_sent"]
    assert codes["0"] == m["rpl_dis_sent"] and codes["3"] == m["rpl_dao_ack_sent"]
    assert {row[2] for row in rpl} == {"1"}  # every ICMPv6 checksum good
    assert sum(1 for row in rows if row[3] == "1") >= 6  # and the GETs got through
    config = tshark(exe, pcap, "-Y", "icmpv6.rpl.opt.config.min_hop_rank_inc", "-V")
    assert "MinHopRankInc: 128" in config  # MRHOF's, from the root's DIO


NESTED = """
name = "nested-capture"
description = "two radio networks, an entity on each gateway, nested"
seed = 1
max_sim_time_s = 2000.0
[network]
topology = "grid"
seed = 3
[network.nodes]
count = 9
spacing_m = 12.0
[network.roles]
gateway = "n0"
producer_count = 3
client = "uplink"
[network.uplink]
[network.second]
channel = 20
[workload]
kind = "group-query"
entity = "nested"
queries = 3
start_s = 120.0
path = "/s/t"
[protocol]
name = "coap"
"""


def test_two_radio_networks_and_their_gateways_link_in_one_pcapng(tmp_path, require_peer):
    """Each medium is an interface of its own: both 802.15.4 channels, each gateway's
    uplink to its host and the Ethernet link on which the first host's EM asks the
    second's."""
    exe = require_peer("tshark")
    (run,) = expand(parse_scenario(NESTED), {}, {"network.lowpan.compression": "none"})
    pcap = tmp_path / "nested.pcap"
    m = run_one(run.config, run.seed, pcap_path=str(pcap)).metrics
    assert m["member_reliability"] == 1.0 and m["group_size"] == 6
    assert_clean(exe, pcap)
    rows = fields(exe, pcap, "frame.interface_name", "ipv6.src", "ipv6.dst", "coap.code")
    interfaces = {row[0] for row in rows}
    assert interfaces == {
        "802.15.4 channel 26",
        "802.15.4 channel 20",
        "uplink",
        "second uplink",
        "gateways link",
    }
    second = [row for row in rows if row[0] == "802.15.4 channel 20" and row[1]]
    assert second and all(row[1].startswith(("fd02::", "fe80::")) for row in second)
    # On the hosts' link: the client's host (fd03::1 on that link) creates the second
    # entity (a POST), then the first gateway's EM (fd01::1) asks the second gateway's
    # (fd04::1) in every query (a GET), through both hosts.
    link = [(row[1], row[2], row[3]) for row in rows if row[0] == "gateways link"]
    assert link.count(("fd03::1", "fd04::1", "2")) == 1
    assert link.count(("fd01::1", "fd04::1", "1")) == 3
