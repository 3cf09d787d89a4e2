"""The scenario keys of radio networks: topology, roles, radio, MAC, 6LoWPAN, routing.

`network.topology` chooses the network. `pair` (the default) is two nodes on
one point-to-point link (`network.link`, `network.impair`); every other
kind is a network of 802.15.4 nodes on a shared radio, described by the
sections below. Their defaults, and where they come from, are in
docs/radio.md and docs/sixlowpan-rpl.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from iotbench.net.radio import phy
from iotbench.net.radio.chips import CHIPS
from iotbench.scenarios.fields import (
    DEVICE_PROFILES,
    OPTIONAL,
    SPREAD_DEVICE_PROFILES,
    Field,
    Invalid,
    Section,
    Table,
    Tagged,
)

TOPOLOGIES = ("pair", "line", "star", "grid", "random", "building", "file")
RADIO_TOPOLOGIES = TOPOLOGIES[1:]
# The sections only radio networks have.
RADIO_SECTIONS = ("nodes", "roles", "radio", "mac", "lowpan", "routing")


def _check_nodes(nodes: Table) -> None:
    area = nodes.get("area_m")
    if area is not None and len(area) not in (2, 3):
        raise Invalid(("area_m",), "expected [width, depth] or [width, depth, height] in metres")


BUILDING = Section(
    doc="The generated office building (topology = building): floors of rooms along a corridor; "
    "several such buildings side by side in rows.",
    fields={
        "floors": Field("int", "Floors.", 5, ge=1, le=100),
        "buildings": Field("int", "Buildings of this plan, side by side in rows.", 1, ge=1),
        "buildings_per_row": Field(
            "int", "Buildings in a row (along x); absent: a square block.", OPTIONAL, ge=1
        ),
        "building_gap_m": Field(
            "float",
            "Open ground between neighbouring buildings (3GPP TR 38.901's average street width).",
            20.0,
            gt=0,
        ),
        "rooms_per_side": Field("int", "Rooms on each side of a floor's corridor.", 16, ge=1),
        "room_width_m": Field("float", "Room width along the corridor.", 4.0, gt=0),
        "room_depth_m": Field("float", "Room depth from the corridor.", 7.0, gt=1),
        "corridor_width_m": Field("float", "Corridor width.", 2.5, gt=0),
        "floor_height_m": Field("float", "Height of a floor.", 3.5, gt=0.5),
        "per_room": Field("int", "Candidate positions per room.", 2, ge=0),
        "corridor_step_m": Field(
            "float", "One candidate position every this along the corridor.", 8.0, gt=0
        ),
        "desk_height_m": Field("float", "Height of the positions in rooms.", 0.8, ge=0),
    },
    optional=True,
)

NODES = Section(
    doc="Where the nodes of a radio network are (see docs/scenarios.md, 'Radio networks').",
    fields={
        "count": Field(
            "int",
            "Nodes (line, star, grid, random; building: drawn from its positions).",
            10,
            ge=2,
            le=100_000,
        ),
        "spacing_m": Field("float", "Distance between neighbours (line, grid).", 10.0, gt=0),
        "radius_m": Field("float", "Radius of the circle around n0 (star).", 10.0, gt=0),
        "columns": Field("int", "Nodes per row (grid); absent: a square grid.", OPTIONAL, ge=1),
        "row_spacing_m": Field(
            "float", "Distance between rows (grid); absent: spacing_m.", OPTIONAL, gt=0
        ),
        "area_m": Field(
            "list",
            "[width, depth] or [width, depth, height], metres: where random nodes are drawn; "
            "for a file, every position must lie inside.",
            OPTIONAL,
            item=Field("float", "", gt=0),
        ),
        "file": Field(
            "str",
            "A CSV or TOML file of nodes (topology = file), relative to the scenario file.",
            OPTIONAL,
        ),
        "links_file": Field(
            "str", "A CSV file of links (from, to, prr) for a CSV node file.", OPTIONAL
        ),
        "layout": Field(
            "table",
            "Filled from `file` when the scenario is loaded; not written by hand.",
            OPTIONAL,
        ),
        "building": BUILDING,
    },
    optional=True,
    checks=(_check_nodes,),
)

ROLES = Section(
    doc="Who does what in a radio network.",
    fields={
        "gateway": Field(
            "str",
            "The border router and root of routing: a node id, auto (n0 of a line, star or "
            "grid; drawn by the network seed otherwise), corner (the node nearest the "
            "layout's origin: a building's west end on its ground floor) or centre (the node "
            "nearest the middle of the layout's ground: a block of buildings' middle).",
            "auto",
        ),
        "producers": Field(
            "list",
            "Producer node ids; empty: every node but the gateway (or `producer_count` of them).",
            [],
            item=Field("str", ""),
        ),
        "producer_count": Field(
            "int", "Draw this many producers among the non-gateway nodes.", OPTIONAL, ge=1
        ),
        "client": Field(
            "str",
            "Where the workload's client runs: gateway, uplink (the host behind the gateway's "
            "Ethernet link, see network.uplink) or a node id.",
            "gateway",
        ),
    },
    optional=True,
)

PATH_LOSS = Section(
    doc="Mean path loss and shadowing (log-distance; defaults: ITU-R P.1238 office at 2.4 GHz).",
    fields={
        "exponent": Field("float", "Path loss exponent n.", 3.0, ge=1, le=8),
        "reference_distance_m": Field("float", "Reference distance d0.", 1.0, gt=0),
        "reference_loss_db": Field(
            "float",
            "Loss at d0; absent: free space at d0 and the channel's frequency.",
            OPTIONAL,
            ge=0,
        ),
        "shadowing_db": Field(
            "float", "Deviation of log-normal shadowing, drawn per pair of nodes.", 6.0, ge=0, le=30
        ),
        "floor_loss_db": Field("float", "Loss of the first floor between two nodes.", 15.0, ge=0),
        "floor_loss_extra_db": Field("float", "Loss of every further floor.", 4.0, ge=0),
        "facade_loss_db": Field(
            "float",
            "Loss of a building's outer wall, crossed twice between two buildings; absent: "
            "3GPP TR 38.901's low-loss outer wall at the channel's frequency (12.1 dB at 2.4 GHz).",
            OPTIONAL,
            ge=0,
        ),
    },
)

VARIATION = Tagged(
    doc="How links vary in time on top of their mean.",
    tag="model",
    tag_doc="none, rayleigh (fading per frame), gilbert-elliott (good/bad states per pair), "
    "gauss-markov (a Gaussian process in dB per pair, as measured link traces vary).",
    variants={
        "none": Section("Links keep their mean power.", {}),
        "rayleigh": Section("Rayleigh block fading: an exponential power gain per frame.", {}),
        "gilbert-elliott": Section(
            "Each pair of nodes flips between a good and a bad state in continuous time.",
            {
                "good_s": Field("float", "Mean time in the good state.", 30.0, gt=0),
                "bad_s": Field("float", "Mean time in the bad state.", 3.0, gt=0),
                "bad_loss_db": Field("float", "Extra attenuation in the bad state.", 10.0, ge=0),
            },
        ),
        "gauss-markov": Section(
            "Each pair's power varies about its mean as a Gaussian process in dB with an "
            "exponential autocorrelation (docs/radio.md: the defaults are the Mercator "
            "datasets' static 802.15.4 links in FIT IoT-LAB's Grenoble building).",
            {
                "sigma_db": Field(
                    "float", "Deviation of the variation about the mean (dB).", 0.4, ge=0, le=20
                ),
                "tau_s": Field(
                    "float", "Time constant of its autocorrelation, e^-(lag / tau).", 3600.0, gt=0
                ),
            },
        ),
    },
    optional=True,
)

ENERGY = Section(
    doc="Radio currents at the supply voltage; absent: the chip's (net/radio/chips.py).",
    fields={
        "voltage_v": Field("float", "Supply voltage.", 3.0, gt=0),
        "off_ma": Field("float", "Sleep current; absent: the chip's.", OPTIONAL, ge=0),
        "idle_ma": Field(
            "float", "Idle current (transceiver off, oscillator on); absent: the chip's.",
            OPTIONAL, ge=0,
        ),
        "listen_ma": Field("float", "Listening (RX on) current; absent: the chip's.", OPTIONAL, ge=0),
        "rx_ma": Field(
            "float", "Current while receiving a frame; absent: the chip's.", OPTIONAL, ge=0
        ),
        "tx_ma": Field(
            "float",
            "Current while transmitting; absent: the chip's at each node's TX power "
            "(AT86RF231: 14 mA at +3 dBm, 11.6 at 0, 7.2 at -17; CC2520: 27.9 at +1).",
            OPTIONAL,
            ge=0,
        ),
    },
)  # fmt: skip


NODE_RADIO_KEYS = {"tx_power_dbm": (-40.0, 30.0), "sensitivity_dbm": (-130.0, -40.0)}
# One node's radio overrides, as the simulator reads them (validated by _check_radio).
NODE_RADIO = Section(
    doc="One node's radio, overriding network.radio's values.",
    fields={key: Field("float", key, OPTIONAL) for key in NODE_RADIO_KEYS},
)


def _check_radio(radio: Table) -> None:
    if radio["channel"] not in phy.CHANNELS:
        raise Invalid(("channel",), f"{radio['channel']} is not one of 11..26 (2.4 GHz O-QPSK)")
    for node, values in radio.get("nodes", {}).items():
        if not isinstance(values, dict):
            raise Invalid(("nodes", node), "expected a table with tx_power_dbm, sensitivity_dbm")
        for key, value in values.items():
            if key not in NODE_RADIO_KEYS:
                allowed = ", ".join(NODE_RADIO_KEYS)
                raise Invalid(("nodes", node, key), f"unknown key {key!r}; allowed: {allowed}")
            low, high = NODE_RADIO_KEYS[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise Invalid(("nodes", node, key), f"expected a number, got {value!r}")
            if not low <= value <= high:
                raise Invalid(
                    ("nodes", node, key),
                    f"{value:g} is out of range: must be between {low:g} and {high:g}",
                )


RADIO = Section(
    doc="The 802.15.4 radio of every node (2.4 GHz O-QPSK, 250 kbit/s).",
    fields={
        "chip": Field(
            "str",
            "The transceiver (net/radio/chips.py, docs/radio.md): its datasheet and driver "
            "give every value below the scenario leaves out, and its rejection of other "
            "802.15.4 channels.",
            "at86rf231",
            choices=tuple(CHIPS),
        ),
        "channel": Field("int", "802.15.4 channel.", 26, ge=11, le=26),
        "tx_power_dbm": Field(
            "float",
            "Transmit power; absent: the chip's default (AT86RF231: +3 dBm; CC2520: +1 dBm, "
            "Contiki's driver).",
            OPTIONAL,
            ge=-40,
            le=30,
        ),
        "sensitivity_dbm": Field(
            "float",
            "Receiver sensitivity, PER 1 % at a 20-byte PSDU; absent: the chip's "
            "(AT86RF231: -101 dBm; CC2520: -98 dBm).",
            OPTIONAL,
            ge=-130,
            le=-40,
        ),
        "cca_threshold_dbm": Field(
            "float",
            "CCA energy threshold; absent: the chip's as its driver sets it (AT86RF231: "
            "-77 dBm, its reset value; CC2520: -84 dBm, Contiki's). 802.15.4 allows at most "
            "10 dB above the -85 dBm sensitivity it specifies: -75 dBm.",
            OPTIONAL,
            ge=-130,
            le=0,
        ),
        "noise_floor_dbm": Field(
            "float",
            "Noise floor; absent: the one that makes the sensitivity hold (docs/radio.md).",
            OPTIONAL,
            ge=-150,
            le=-40,
        ),
        "path_loss": PATH_LOSS,
        "variation": VARIATION,
        "interference_floor_db": Field(
            "float",
            "Signals this far under a receiver's noise floor are ignored.",
            10.0,
            ge=0,
            le=40,
        ),
        "nodes": Field(
            "table",
            "Per-node radios: node id -> { tx_power_dbm, sensitivity_dbm } overriding the "
            "values above, e.g. nodes = { gw = { tx_power_dbm = 0.0 } }.",
            OPTIONAL,
            item=NODE_RADIO,
        ),
        "prr_frame_bytes": Field(
            "int",
            "Frame size the packet reception ratios of a topology file refer to.",
            50,
            ge=5,
            le=127,
        ),
        "energy": ENERGY,
        "series_interval_s": Field(
            "float",
            "How often `iotbench run --series` samples each node's energy and MAC counters.",
            60.0,
            gt=0,
        ),
    },
    optional=True,
    checks=(_check_radio,),
)

MAC = Section(
    doc="The MAC: IEEE 802.15.4 unslotted CSMA/CA (defaults: the standard's), or Contiki's "
    "CSMA over NullRDC (docs/radio.md).",
    fields={
        "kind": Field(
            "str",
            "ieee802154: the standard's CSMA/CA with its backoffs and frame retries "
            "(net/mac/csma.py); at86rf2xx: the same run by the AT86RF231 itself under "
            "RIOT's driver, which takes no frame but the awaited ACK while it sends and "
            "has one frame buffer, so a frame arriving as the next is loaded is lost "
            "after its ACK (csma.py, extended mode); contiki: Contiki's csma.c over "
            "NullRDC, per-neighbour queues and backoffs of 125 ms and more "
            "(net/mac/contiki_csma.py; S6's nodes).",
            "ieee802154",
            choices=("ieee802154", "at86rf2xx", "contiki"),
        ),
        "max_transmissions": Field(
            "int",
            "contiki: transmissions of a frame before it is given up (a busy channel "
            "costs none); 5, SICSLOWPAN_CONF_MAX_MAC_TRANSMISSIONS on the RM090/WiSMote.",
            5,
            ge=1,
            le=255,
        ),
        "neighbour_queues": Field(
            "int",
            "contiki: neighbours with frames queued at once (CSMA_MAX_NEIGHBOR_QUEUES).",
            2,
            ge=1,
        ),
        "backoff_unit_s": Field(
            "float",
            "contiki: T, the backoff unit: CLOCK_SECOND / NETSTACK_RDC_CHANNEL_CHECK_RATE.",
            0.125,
            gt=0,
        ),
        "min_be": Field("int", "macMinBE.", 3, ge=0, le=8),
        "max_be": Field("int", "macMaxBE.", 5, ge=3, le=8),
        "max_csma_backoffs": Field("int", "macMaxCSMABackoffs.", 4, ge=0, le=5),
        "max_frame_retries": Field("int", "macMaxFrameRetries.", 3, ge=0, le=7),
        "queue_frames": Field(
            "int", "Transmit queue limit per node (contiki: QUEUEBUF_NUM, 8 there).", 16, ge=1
        ),
        "address_mode": Field(
            "str",
            "Addresses in frames: extended (EUI-64) or short (16 bits).",
            "extended",
            choices=("extended", "short"),
        ),
        "pan_id": Field("int", "PAN identifier.", 0x23, ge=0, le=0xFFFE),
        "interframe_spacing": Field(
            "bool", "Wait SIFS/LIFS after a successful transmission.", True
        ),
    },
    optional=True,
)

LOWPAN = Section(
    doc="6LoWPAN adaptation of IPv6 to 802.15.4 (RFC 4944, RFC 6282).",
    fields={
        "compression": Field(
            "str",
            "none: the uncompressed IPv6 dispatch (as S4 ran); iphc: RFC 6282 IPHC with UDP NHC.",
            "none",
            choices=("none", "iphc"),
        ),
        "reassembly_timeout_s": Field(
            "float", "Give up a datagram whose fragments stop coming.", 60.0, gt=0
        ),
        "reassembly_datagrams": Field("int", "Datagrams reassembled at once per node.", 8, ge=1),
        "reassembly_bytes": Field("int", "Reassembly buffer per node.", 4096, ge=128),
    },
    optional=True,
)

ROUTING = Section(
    doc="Routes in a radio network: RPL, or a tree computed once from the link model.",
    fields={
        "protocol": Field(
            "str",
            "rpl: RPL storing mode (RFC 6550) running in the simulation; static: the tree of "
            "least expected transmissions from the link model, the same for every variant of a "
            "campaign (NDN always uses it).",
            "rpl",
            choices=("rpl", "static"),
        ),
        "objective": Field(
            "str",
            "RPL objective function: MRHOF with ETX (RFC 6719) or OF0 (RFC 6552).",
            "mrhof",
            choices=("mrhof", "of0"),
        ),
        "dio_interval_min": Field("int", "DIOIntervalMin: Imin = 2^this ms.", 12, ge=0, le=30),
        "dio_interval_doublings": Field("int", "DIOIntervalDoublings.", 8, ge=0, le=30),
        "dio_redundancy": Field("int", "DIORedundancyConstant k (0: never suppress).", 10, ge=0),
        "dao_ack": Field("bool", "Ask for DAO-ACKs.", True),
        "dao_ack_timeout_s": Field(
            "float",
            "RPL: a DAO unacknowledged this long is sent again; absent: 5 s.",
            OPTIONAL,
            gt=0,
        ),
        "dao_style": Field(
            "str",
            "RPL: refresh (absent), a node's own targets in a DAO every half lifetime and "
            "its children's news passed up as it comes; gnrc, RIOT's gnrc_rpl: one DAO with "
            "every route the node holds, 1 to 2 s after each DAO from a child and 60 to 61 s "
            "after the last one was acknowledged or given up (docs/sixlowpan-rpl.md).",
            OPTIONAL,
            choices=("refresh", "gnrc"),
        ),
        "default_lifetime": Field(
            "int",
            "RPL: route lifetime in lifetime units (DAOs are refreshed at half); absent: 30.",
            OPTIONAL,
            ge=1,
            le=255,
        ),
        "lifetime_unit_s": Field(
            "int", "RPL: the lifetime unit, seconds; absent: 60.", OPTIONAL, ge=1, le=65535
        ),
        "parents": Field(
            "str",
            "RPL: free (absent), the objective function picks each node's parent; tree, "
            "each node takes only its parent in the tree of least expected transmissions "
            "(the static tree), so every variant of a campaign shares one tree that does "
            "not rearrange while RPL still runs its messages (S4).",
            OPTIONAL,
            choices=("free", "tree"),
        ),
        "rank": Field(
            "str",
            "RPL: objective (absent), Rank as the objective function computes it from the "
            "link's ETX; hops, one MinHopRankIncrease per hop (RIOT's OF0).",
            OPTIONAL,
            choices=("objective", "hops"),
        ),
        "min_link_prr": Field(
            "float",
            "Static tree: links whose expected reception ratio is below this are not used.",
            0.5,
            gt=0,
            le=1,
        ),
        "tree_channel": Field(
            "int",
            "The channel whose link powers the tree of least expected transmissions is "
            "computed from (its frequency changes every link's loss a little, and the tree "
            "with it); absent: the network's own. Variants on different channels that must "
            "share one tree (S4) name the same one.",
            OPTIONAL,
            ge=11,
            le=26,
        ),
        "multicast": Field(
            "str",
            "Multicast forwarding: smrf (down the DODAG) or none.",
            "smrf",
            choices=("smrf", "none"),
        ),
        "max_routes": Field("int", "RPL: downward routes a node stores at most.", 1024, ge=1),
        "etx_noack_penalty": Field(
            "float",
            "RPL: the ETX a frame never acknowledged counts (Contiki's MRHOF: 10); absent: 8.",
            OPTIONAL,
            ge=1,
        ),
        "max_neighbours": Field(
            "int",
            "RPL: neighbours a node keeps (candidate parents and their ETX); absent: 32.",
            OPTIONAL,
            ge=1,
        ),
        "max_group_routes": Field(
            "int",
            "RPL with SMRF: multicast groups a node keeps routes for, beside max_routes "
            "(Contiki's UIP_CONF_MAX_MCAST6_ROUTES table); absent: no limit.",
            OPTIONAL,
            ge=1,
        ),
        "smrf_delay_s": Field(
            "float",
            "SMRF: the delay unit D before a node forwards a multicast datagram (Contiki-NG: "
            "1/8 s; Contiki 2014: 4 ticks of 1/128 s).",
            0.125,
            ge=0,
        ),
        "smrf_spread": Field(
            "int", "SMRF: the delay is D times a random whole factor 1 .. this.", 2, ge=1
        ),
        "smrf_buffers": Field(
            "int",
            "SMRF: datagrams waiting to be forwarded at once; a newer one replaces the "
            "oldest (Contiki's smrf.c has one buffer); absent: no limit.",
            OPTIONAL,
            ge=1,
        ),
    },
    optional=True,
)

INTERFERER = Section(
    doc="A Wi-Fi interferer at 2.4 GHz: never defers to 802.15.4; 802.15.4 radios take "
    "the part of its power in their channel (spectrum of 802.11 OFDM or DSSS) as noise, "
    "and their CCA senses it (net/radio/wifi.py).",
    fields={
        "position": Field(
            "list",
            "[x, y] or [x, y, z], metres: the station (the sender).",
            item=Field("float", ""),
        ),
        "floor": Field("int", "The station's floor (a building's floors attenuate).", 0, ge=0),
        "building": Field(
            "int",
            "The station's building, numbered as the building topology's (one no node is "
            "in: a building of its own, two outer walls from every node).",
            0,
            ge=0,
        ),
        "rate_bps": Field("float", "Offered load (S6 sweeps 0 to 28.5 Mbit/s).", ge=0),
        "earlier_rates_bps": Field(
            "list",
            "A stepped sweep (S6's: the Wi-Fi rate raised step by step over one network): "
            "the rates of the steps before the measured one, in order. A group-query "
            "run then lives through every step, `workload.queries` queries each, the "
            "interferer at each step's rate from the end of the previous step's last "
            "query, and measures the last step, at rate_bps; absent: one step.",
            OPTIONAL,
            item=Field("float", "", ge=0),
        ),
        "channel": Field("int", "Wi-Fi channel (1..14).", 6, ge=1, le=14),
        "tx_power_dbm": Field("float", "Transmit power of each Wi-Fi node.", 20.0, ge=-20, le=36),
        "pattern": Field(
            "str",
            "How its frames come: `iperf` (iperf's UDP test from the station to its "
            "access point: datagrams paced at the rate, each in a data frame after DIFS "
            "and backoff, the access point's ACK after SIFS, its beacons every 102.4 ms), "
            "`poisson` (bare bursts, gaps exponential) or `trains` (back-to-back trains "
            "of `train_frames` bursts on average, idle between them: bursty traffic).",
            "iperf",
            choices=("iperf", "poisson", "trains"),
        ),
        "ap_position": Field(
            "list",
            "iperf: [x, y] or [x, y, z] of the access point (the receiver, which sends "
            "the ACKs and beacons), on the station's floor; absent: 1 m from the station "
            "along x.",
            OPTIONAL,
            item=Field("float", ""),
        ),
        "payload_bytes": Field(
            "int", "iperf: UDP payload per datagram (iperf's default 1,470).", 1470, ge=1, le=2272
        ),
        "beacons": Field("bool", "iperf: the access point's beacons (every 102.4 ms).", True),
        "frame_bytes": Field("int", "poisson, trains: bytes per burst.", 1500, ge=1),
        "phy_rate_bps": Field("float", "802.11 PHY rate of the data frames.", 54e6, gt=0),
        "start_s": Field("float", "When it starts.", 0.0, ge=0),
        "train_frames": Field(
            "float", "Mean frames per train (pattern `trains`; geometric).", 20.0, ge=1
        ),
    },
)

DEVICE = Section(
    doc="The nodes' devices (proto/ndn/profiles.py): CPU time per packet, so a busy "
    "node queues its work, and packet memory, which bounds what a node's MAC queues "
    "and reassembles (net/pktbuf.py).",
    fields={
        "profile": Field(
            "str",
            "Every node's profile for the IP stacks (forwarding, CoAP and MQTT-SN "
            "messages); absent: the IP stacks cost no CPU time. NDN nodes use "
            "protocol.ndn.profile.",
            OPTIONAL,
            choices=DEVICE_PROFILES,
        ),
        "gateway_profile": Field(
            "str",
            "The gateway's profile, for every stack (NDN included); absent: as the other nodes.",
            OPTIONAL,
            choices=DEVICE_PROFILES,
        ),
        "pktbuf_bytes": Field(
            "int",
            "Packet memory of the nodes whose device is `profile` (not a gateway with a "
            "`gateway_profile`); absent: the profile's (m3, samr21: RIOT's 6,144 bytes; "
            "a8, host: 212,992).",
            OPTIONAL,
            ge=128,
        ),
    },
    optional=True,
)


UPLINK = Section(
    doc="A link from the gateway to a host (`uplink`), e.g. a client: Ethernet, or the "
    "serial line of a border router and its host (net/serial.py).",
    fields={
        "kind": Field(
            "str",
            "ethernet (absent): a point-to-point link at rate_bps; serial: a UART at `baud` "
            "(8N1) with SLIP or ethos framing, as S4's and S6's border routers had.",
            OPTIONAL,
            choices=("ethernet", "serial"),
        ),
        "rate_bps": Field(
            "int", "Ethernet: link rate; 0 = no serialisation delay.", 100_000_000, ge=0
        ),
        "baud": Field(
            "int",
            "Serial: the line's baud rate (RIOT's ethos: 500,000; Contiki's SLIP: 115,200); "
            "absent: 115,200.",
            OPTIONAL,
            ge=300,
        ),
        "framing": Field(
            "str",
            "Serial: how packets are framed on the line; absent: slip.",
            OPTIONAL,
            choices=("slip", "ethos"),
        ),
        "busy_wait": Field(
            "bool",
            "Serial: the border router's CPU waits for each byte it writes to the host "
            "(Contiki's SLIP on the MSP430): meanwhile its radio keeps `radio_fifo_frames` "
            "received frames, its serial input `input_packets` packets, and its MAC sends "
            "nothing (net/busy_wait.py); absent: false.",
            OPTIONAL,
        ),
        "input_packets": Field(
            "int", "busy_wait: packets from the host the node buffers; absent: 2.", OPTIONAL, ge=1
        ),
        "radio_fifo_frames": Field(
            "int",
            "busy_wait: received frames the radio holds (the CC2520's FIFO: 1); absent: 1.",
            OPTIONAL,
            ge=1,
        ),
        "delay_s": Field(
            "float", "Propagation delay (ethernet; a serial line has none).", 0.0005, ge=0
        ),
        "mtu_bytes": Field("int", "IPv6 MTU.", 1500, ge=1280, le=65535),
        "queue_packets": Field("int", "Drop-tail queue of each direction.", 100, ge=1),
        "profile": Field(
            "str",
            "The host's device profile (proto/ndn/profiles.py): CPU time of each message "
            "its applications handle; absent: no CPU time.",
            OPTIONAL,
            choices=DEVICE_PROFILES,
        ),
        "cost_spread": Field(
            "bool",
            "Each message's CPU time drawn from the spread measured for the profile's "
            "program (a8: the study's aiocoap PUT server one PUT at a time, "
            "bench/gateway_costs.py --answers) instead of its median; operations without "
            "a measured spread keep their median; absent: false.",
            OPTIONAL,
        ),
        "cpu_slowdown": Field(
            "float",
            "The host runs its programs this many times slower than its profile says: a "
            "what-if for a factor nobody measured (the A8's Python against CoreMark, "
            "docs/studies/s4.md); absent: 1.",
            OPTIONAL,
            gt=0,
        ),
    },
    optional=True,
)


SECOND = Section(
    doc="A second radio network: the first one again (same layout, link draws and "
    "roles; node ids `b.<id>`), shifted by `offset_m`, on its own 802.15.4 channel and "
    "prefix fd02::/64, its gateway (or, with network.uplink, its gateway's own host) "
    "joined to the first's by an Ethernet link (fd03::/64).",
    fields={
        "channel": Field("int", "Its 802.15.4 channel (not the first network's).", ge=11, le=26),
        "offset_m": Field(
            "list",
            "[dx, dy] or [dx, dy, dz], metres: its nodes sit this far from the first's "
            "(S6's second network: other nodes of the same room); absent: at the same "
            "places (a twin).",
            OPTIONAL,
            item=Field("float", ""),
        ),
        "rate_bps": Field(
            "int", "The gateways' link rate; 0 = no serialisation delay.", 100_000_000, ge=0
        ),
        "delay_s": Field("float", "The gateways' link propagation delay.", 0.0005, ge=0),
        "mtu_bytes": Field("int", "IPv6 MTU of the gateways' link.", 1500, ge=1280, le=65535),
        "queue_packets": Field("int", "Drop-tail queue of each direction.", 100, ge=1),
    },
    optional=True,
)


def is_radio_topology(topology: str | None) -> bool:
    """The one rule for what a network is: any topology but pair is a radio network,
    and an absent topology is a pair."""
    return topology not in (None, "pair")


def is_radio(network: Mapping[str, Any]) -> bool:
    """Whether a network config (a scenario's or a run's [network] table) is a radio
    network."""
    return is_radio_topology(network.get("topology"))


def fill_radio_sections(network: Table) -> Table:
    """A radio network's sections get their defaults even when the file omits them
    (a pair network keeps none of them, so its config, and its seed, are as before).
    A radio network has no point-to-point link of its own to configure."""
    if not is_radio(network):
        return network
    for key in ("link", "impair"):
        if key in network:
            raise Invalid(
                (key,),
                "a radio network has no point-to-point link: its links are the radio "
                "(network.radio) and the gateway's uplink (network.uplink)",
            )
    filled = dict(network)
    for key in RADIO_SECTIONS:
        filled.setdefault(key, {})
    filled.setdefault("ip_version", 6)
    return filled


def check_radio_network(network: Table) -> None:
    topology = network.get("topology")
    radio_keys = [
        k for k in (*RADIO_SECTIONS, "interferers", "uplink", "second", "device") if k in network
    ]
    if not is_radio(network):
        if radio_keys:
            raise Invalid(
                (radio_keys[0],),
                f"only radio networks have it; set network.topology to one of "
                f"{', '.join(RADIO_TOPOLOGIES)}",
            )
        return
    if network["ip_version"] != 6:
        raise Invalid(("ip_version",), "radio networks run IPv6 over 6LoWPAN: must be 6")
    nodes = network["nodes"]
    if topology == "file" and "file" not in nodes and "layout" not in nodes:
        raise Invalid(("nodes", "file"), "missing required key for topology = file: a file name")
    if topology == "random" and "area_m" not in nodes:
        raise Invalid(
            ("nodes", "area_m"), "missing required key for topology = random: [width, depth]"
        )
    if topology == "star" and nodes["count"] < 2:
        raise Invalid(("nodes", "count"), "a star needs a centre and at least one other node")
    client = network["roles"]["client"]
    if client == "uplink" and "uplink" not in network:
        raise Invalid(("roles", "client"), "uplink needs a network.uplink section")
    uplink = network.get("uplink", {})
    if uplink.get("cpu_slowdown") is not None and uplink.get("profile") is None:
        raise Invalid(
            ("uplink", "cpu_slowdown"),
            "slows the host's device profile: set network.uplink.profile too",
        )
    if uplink.get("cost_spread") and uplink.get("profile") not in SPREAD_DEVICE_PROFILES:
        raise Invalid(
            ("uplink", "cost_spread"),
            f"needs a profile with a measured spread (network.uplink.profile = "
            f"{', '.join(repr(p) for p in SPREAD_DEVICE_PROFILES)}), not "
            f"{uplink.get('profile')!r}",
        )
    second = network.get("second")
    if second is not None and second["channel"] == network["radio"]["channel"]:
        raise Invalid(
            ("second", "channel"),
            f"{second['channel']} is the first network's channel (network.radio.channel); "
            "the second network needs its own",
        )
