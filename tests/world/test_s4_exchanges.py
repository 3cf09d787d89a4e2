"""S4's exchanges message by message, against what the study's code does.

Each S4 variant runs on its single-hop scenario (a producer n1, the gateway n0,
and for the push variants the gateway's host behind its serial line), and
every message on the air or on the line is decoded: who sends what to whom,
with which options and sizes, and which timer repeats it. The study's code is
5G-I3/ACM-ICN-2018 (its RIOT apps) and 5G-I3/RIOT-public; the scenario files
cite the file each value comes from.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from spies import recorded_packets

import iotbench.world.run as world
from iotbench.net import ieee802154 as mac
from iotbench.net.radio.medium import RadioMedium
from iotbench.proto.coap import codec as coap
from iotbench.proto.mqttsn import codec as sn
from iotbench.proto.ndn import hopp
from iotbench.proto.ndn.data import Data
from iotbench.proto.ndn.interest import Interest
from iotbench.proto.ndn.types import SignatureType
from iotbench.scenarios import expand, load_scenario
from iotbench.world.networks import radio as radio_network

UNCOMPRESSED_IPV6 = 0x41  # 6LoWPAN's IPv6 dispatch: no header compression in S4
UDP, ICMPV6 = 17, 58
RADIO_HEADER = 21  # FCF, sequence, PAN id, two extended addresses (PAN id compression)
FCS = 2
JSON_BYTES = 32  # S4's reading, {"id":"0x..........","val":NNNN}


@dataclass
class Msg:
    t: float
    medium: str  # "radio" or "serial"
    src: str | None
    dst: str | None
    size: int  # bytes on the medium: the whole frame, or the IP packet on the line
    layer: str  # "coap", "mqttsn", "rpl", "interest", "data", "hopp", "mac-ack"
    body: object  # the decoded message
    body_bytes: int  # its own length


def _decode(pkt) -> Msg | None:
    radio = isinstance(pkt.medium, RadioMedium)
    data = pkt.data
    if radio:
        frame = mac.decode(data)
        if isinstance(frame, mac.Ack):
            return Msg(pkt.t_sent, "radio", pkt.src, pkt.dst, len(data), "mac-ack", frame, 0)
        payload = frame.payload
        if payload[0] != UNCOMPRESSED_IPV6:
            return _decode_ndn(pkt, payload)
        packet = payload[1:]
    else:
        packet = data
    next_header = packet[6]
    if next_header == ICMPV6:
        return Msg(pkt.t_sent, _medium(radio), pkt.src, pkt.dst, len(data), "rpl", packet, 0)
    assert next_header == UDP
    dport = int.from_bytes(packet[42:44], "big")
    sport = int.from_bytes(packet[40:42], "big")
    body = packet[48:]
    if 5683 in (sport, dport):
        return Msg(
            pkt.t_sent,
            _medium(radio),
            pkt.src,
            pkt.dst,
            len(data),
            "coap",
            coap.decode(body),
            len(body),
        )
    assert 1883 in (sport, dport)
    return Msg(
        pkt.t_sent,
        _medium(radio),
        pkt.src,
        pkt.dst,
        len(data),
        "mqttsn",
        sn.decode(body),
        len(body),
    )


def _decode_ndn(pkt, payload: bytes) -> Msg:
    if hopp.is_hopp(payload):
        body, layer = hopp.decode(payload), "hopp"
    elif payload[0] == 0x05:
        body, layer = Interest(payload), "interest"
    else:
        body, layer = Data(payload), "data"
    return Msg(pkt.t_sent, "radio", pkt.src, pkt.dst, len(pkt.data), layer, body, len(payload))


def _medium(radio: bool) -> str:
    return "radio" if radio else "serial"


def run_variant(monkeypatch, variant: str, interval: str = "5s", items: int = 3, **sets):
    """The variant's single-hop run: (its messages in order, its metrics)."""
    packets = recorded_packets(monkeypatch)
    scenario = load_scenario("s4-single-hop-scheduled")
    filters = {"variant": [variant], "interval": [interval]}
    (run,) = expand(scenario, filters, {"workload.items": items, **sets})
    metrics = world.run_one(run.config, run.seed).metrics
    messages = [m for m in map(_decode, packets) if m is not None]
    return messages, metrics


def of(messages: list[Msg], layer: str, medium: str = "radio") -> list[Msg]:
    return [m for m in messages if m.layer == layer and m.medium == medium]


# A run ends when its last item has arrived: the answer to the last request may
# not be sent by then, so the checks below pair requests with the answers sent.


@pytest.mark.parametrize(
    "variant",
    [
        "coap-put-non",
        "coap-put-con",
        "coap-get-non",
        "coap-get-con",
        "coap-obs",
        "mqttsn-qos0",
        "mqttsn-qos1",
        "ndn",
        "ndn-inot",
        "hopp",
    ],
)
def test_every_frame_of_every_variant_fits_one_802154_frame(monkeypatch, variant):
    messages, metrics = run_variant(monkeypatch, variant)
    radio = [m for m in messages if m.medium == "radio"]
    assert radio and all(m.size <= mac.MAX_FRAME_BYTES for m in radio)
    # No 6LoWPAN fragment header (FRAG1 0xC0, FRAGN 0xE0) and no NDN fragment (first
    # bit 1) in any frame: every one is decoded whole above.
    assert metrics["delivery_ratio"] == 1.0


def test_coap_put_con_is_gcoaps_put_and_aiocoaps_piggybacked_204(monkeypatch):
    messages, metrics = run_variant(monkeypatch, "coap-put-con")
    up = [m for m in of(messages, "coap") if m.src == "n1"]
    down = [m for m in of(messages, "coap") if m.src == "n0"]
    assert len(up) == 3 and len(down) >= 2
    for put, ack in zip(up, down, strict=False):
        req = put.body
        assert req.type == coap.Type.CON and req.code == coap.Code.PUT
        assert req.uri_path == "/i3/gasval" and len(req.token) == 2
        assert req.content_format == 0  # gcoap_finish(..., COAP_FORMAT_TEXT)
        assert len(req.payload) == JSON_BYTES
        # 4 header, 2 token, Uri-Path i3 (3) and gasval (7), Content-Format 0 (1),
        # payload marker, the reading.
        assert put.body_bytes == 4 + 2 + 3 + 7 + 1 + 1 + JSON_BYTES
        assert put.size == RADIO_HEADER + 1 + 40 + 8 + put.body_bytes + FCS
        resp = ack.body
        assert resp.type == coap.Type.ACK and resp.code == coap.Code.CHANGED
        assert resp.message_id == req.message_id and resp.token == req.token
        assert resp.payload == b""
    # Through the border router's serial line to the host (aiocoap) and back.
    line = of(messages, "coap", "serial")
    assert [m.src for m in line][:5] == ["n0", "uplink", "n0", "uplink", "n0"]
    assert metrics["app_retransmissions_per_item"] == 0


def test_coap_put_non_gets_a_non_204_as_aiocoap_answers_a_non_request(monkeypatch):
    messages, _ = run_variant(monkeypatch, "coap-put-non")
    up = [m.body for m in of(messages, "coap") if m.src == "n1"]
    down = [m.body for m in of(messages, "coap") if m.src == "n0"]
    assert [r.type for r in up] == [coap.Type.NON] * 3 and len(down) >= 2
    assert all(r.type == coap.Type.NON and r.code == coap.Code.CHANGED for r in down)
    assert [r.token for r in down] == [r.token for r in up][: len(down)]


@pytest.mark.parametrize("variant, kind", [("coap-get-con", "con"), ("coap-get-non", "non")])
def test_coap_get_is_the_gateways_gcoap_asking_for_the_current_value(monkeypatch, variant, kind):
    messages, metrics = run_variant(monkeypatch, variant)
    asks = [m for m in of(messages, "coap") if m.src == "n0"]
    answers = [m for m in of(messages, "coap") if m.src == "n1"]
    assert len(asks) == len(answers) == 3
    expected = coap.Type.CON if kind == "con" else coap.Type.NON
    for ask, answer in zip(asks, answers, strict=True):
        req, resp = ask.body, answer.body
        assert req.type == expected and req.code == coap.Code.GET
        assert req.uri_path == "/i3/gasval" and req.payload == b""
        assert ask.body_bytes == 4 + 2 + 3 + 7  # no payload, no Content-Format
        assert resp.code == coap.Code.CONTENT and resp.content_format == 50  # JSON
        assert len(resp.payload) == JSON_BYTES and resp.token == req.token
        assert resp.type == (coap.Type.ACK if kind == "con" else coap.Type.NON)
    # The item is the request: it arrives with its answer, milliseconds later.
    assert metrics["requests_per_item"] == 1.0
    assert metrics["tta_p99_s"] < 0.05
    assert not of(messages, "coap", "serial")  # the GET client runs on the radio node


def test_coap_obs_registers_with_a_non_get_and_gets_non_notifications(monkeypatch):
    messages, metrics = run_variant(monkeypatch, "coap-obs")
    asks = [m.body for m in of(messages, "coap") if m.src == "n0"]
    sent = [m.body for m in of(messages, "coap") if m.src == "n1"]
    (register,) = asks
    assert register.type == coap.Type.NON and register.code == coap.Code.GET
    assert register.observe == 0 and register.uri_path == "/i3/gasval"
    assert all(m.type == coap.Type.NON and m.observe is not None for m in sent)
    assert all(m.token == register.token for m in sent)
    observes = [m.observe for m in sent]
    assert observes == sorted(observes) and len(set(observes)) == len(observes)
    # The registration's answer and then one notification per reading.
    assert len(sent) == 1 + metrics["items"]
    assert all(len(m.payload) == JSON_BYTES for m in sent)


@pytest.mark.parametrize("qos", [0, 1])
def test_mqttsn_is_asymcutes_session_with_the_topic_registered_once(monkeypatch, qos):
    messages, metrics = run_variant(monkeypatch, f"mqttsn-qos{qos}")
    up = [m.body for m in of(messages, "mqttsn") if m.src == "n1"]
    down = [m.body for m in of(messages, "mqttsn") if m.src == "n0"]
    connect, register, *publishes = up
    assert isinstance(connect, sn.Connect) and connect.clean_session
    assert connect.duration_s == 5000  # ASYMCUTE_KEEPALIVE
    assert len(connect.client_id) == 16  # the 8-byte link-layer address in hex
    int(connect.client_id, 16)
    assert isinstance(register, sn.Register) and register.topic_name == "/i3/gasval"
    assert isinstance(down[0], sn.ConnAck) and isinstance(down[1], sn.RegAck)
    assert [type(p) for p in publishes] == [sn.Publish] * metrics["items"]
    assert all(p.qos == qos and len(p.data) == JSON_BYTES for p in publishes)
    assert all(p.topic_id == down[1].topic_id for p in publishes)
    acks = [m for m in down[2:] if isinstance(m, sn.PubAck)]
    if qos:
        assert len(publishes) - 1 <= len(acks) <= len(publishes)
        assert [a.msg_id for a in acks] == [p.msg_id for p in publishes][: len(acks)]
    else:
        assert not acks


def test_ndn_pull_is_the_vanilla_consumers_interest_and_the_producers_unsigned_data(
    monkeypatch,
):
    messages, metrics = run_variant(monkeypatch, "ndn")
    interests, datas = of(messages, "interest"), of(messages, "data")
    assert len(interests) == len(datas) == 3
    for k, (ask, answer) in enumerate(zip(interests, datas, strict=True)):
        interest, data = ask.body, answer.body
        name = interest.name
        assert len(name) == 4 and name[0].value == b"i3" and name[2].value == b"gasval"
        assert len(name[1].value) == 23  # aa:bb:cc:dd:ee:ff:00:11, RIOT's form
        assert name[3].value == f"{k:04d}".encode()
        assert interest.lifetime_ms == 10_000 and not interest.must_be_fresh
        assert not interest.can_be_prefix and interest.hop_limit is None
        assert ask.body_bytes == 57  # CCN-lite's: Name, a 4-byte Nonce, InterestLifetime
        assert data.name == name and len(data.content) == JSON_BYTES
        assert data.signature_info.signature_type == SignatureType.DIGEST_SHA256
        assert data.signature_value == b"" and data.freshness_period_ms == 0
        assert answer.body_bytes == 90
        assert ask.src == "n0" and answer.src == "n1"
    assert metrics["requests_per_item"] == 1.0


def test_ndn_inot_carries_the_reading_in_the_name_and_gets_an_ack_data(monkeypatch):
    messages, metrics = run_variant(monkeypatch, "ndn-inot")
    interests, acks = of(messages, "interest"), of(messages, "data")
    assert len(interests) == metrics["items"] and len(acks) >= len(interests) - 1
    for notify, ack in zip(interests, acks, strict=False):
        name = notify.body.name
        assert len(name) == 5 and len(name[4].value) == JSON_BYTES
        assert notify.body.app_parameters is None  # no ParametersSha256DigestComponent
        assert notify.body_bytes == 91 and ack.body_bytes == 96
        assert ack.body.name == name and ack.body.content == b"ACK\x00"
        assert notify.src == "n1" and ack.src == "n0"


def test_hopp_names_go_up_in_nams_and_each_hop_pulls(monkeypatch):
    messages, metrics = run_variant(monkeypatch, "hopp")
    nams = [m for m in of(messages, "hopp") if isinstance(m.body, hopp.Nam)]
    pulls, datas = of(messages, "interest"), of(messages, "data")
    assert len(datas) == metrics["items"] == 3
    assert all(m.src == "n1" and m.dst == "n0" for m in nams)
    # The name as the apps print it, colons and all (hopp.nam_text): a 46-byte NAM.
    assert {m.body.names[0] for m in nams} == {hopp.nam_text(d.body.name) for d in datas}
    assert all(":" in m.body.names[0] and m.body_bytes == 46 for m in nams)
    assert all(p.src == "n0" for p in pulls) and all(d.src == "n1" for d in datas)
    assert all(d.body_bytes == 90 for d in datas)
    pams = [m for m in of(messages, "hopp") if isinstance(m.body, hopp.Pam)]
    assert pams and pams[0].body.prefix == "/i3" and pams[0].body.rank == 1


def test_coap_con_retransmits_every_2_s_four_times(monkeypatch):
    """gcoap as the study set it: COAP_ACK_TIMEOUT 2 s before each retransmission, no
    randomisation, at most COAP_MAX_RETRANSMIT (4)."""
    _deafen(monkeypatch, "n0")
    messages, metrics = run_variant(monkeypatch, "coap-put-con", items=1)
    puts = [m for m in of(messages, "coap") if m.src == "n1"]
    # A frame's own MAC retries come within milliseconds; the CoAP attempts 2 s apart.
    firsts = _first_of_each_attempt(puts)
    gaps = [round(b - a, 1) for a, b in zip(firsts, firsts[1:], strict=False)]
    assert gaps == [2.0, 2.0, 2.0, 2.0]
    assert metrics["delivery_ratio"] == 0.0


def _deafen(monkeypatch, node: str, at: float = 12.0) -> None:
    """Make `node`'s radio deaf from `at` on (after the first item's exchange began):
    nothing it should receive is acknowledged, and what it sends still goes out.

    Wraps the Radio the network builder makes (the class itself may be compiled,
    which takes no patches)."""
    make = radio_network.Radio

    def radio(medium, index, name, **settings):
        made = make(medium, index, name, **settings)
        if name == node:
            medium.sim.at(at, setattr, made, "sensitivity_mw", float("inf"))
        return made

    monkeypatch.setattr(radio_network, "Radio", radio)


def _first_of_each_attempt(msgs: list[Msg]) -> list[float]:
    """The first transmission of each attempt: MAC retries follow within 100 ms."""
    out: list[float] = []
    for m in msgs:
        if not out or m.t - out[-1] > 0.5:
            out.append(m.t)
    return out


def test_mqttsn_qos1_retransmits_every_2_s_four_times_then_gives_the_reading_up(
    monkeypatch,
):
    _deafen(monkeypatch, "n0")
    messages, metrics = run_variant(monkeypatch, "mqttsn-qos1", items=1)
    publishes = [m for m in of(messages, "mqttsn") if isinstance(m.body, sn.Publish)]
    firsts = _first_of_each_attempt(publishes)
    assert [round(b - a, 1) for a, b in zip(firsts, firsts[1:], strict=False)] == [2.0] * 4
    assert [p.body.dup for p in publishes][:1] == [False]
    assert metrics["delivery_ratio"] == 0.0


def test_ndn_retransmits_hop_by_hop_every_2_s_with_the_interests_own_nonce(monkeypatch):
    """CCN-lite: the forwarder holding the PIT entry sends the same Interest (same
    nonce) again every CCNL_INTEREST_RETRANS_TIMEOUT (2 s), CCNL_MAX_INTEREST_RETRANSMIT
    (4) times, until the entry expires (10 s)."""
    _deafen(monkeypatch, "n1")
    messages, metrics = run_variant(monkeypatch, "ndn", items=1)
    interests = of(messages, "interest")
    firsts = _first_of_each_attempt(interests)
    assert [round(b - a, 1) for a, b in zip(firsts, firsts[1:], strict=False)] == [2.0] * 4
    assert len({m.body.nonce for m in interests}) == 1
    assert metrics["delivery_ratio"] == 0.0
