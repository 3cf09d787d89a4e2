"""The scenario schema: every key a scenario file may hold, in one place.

To add a protocol, write its `Section` and add it to `PROTOCOLS`
(protocol_schema.py); the
`protocol.name` choices, validation and the docs' key reference follow.
docs/scenarios.md carries a key reference generated from this module
(`python -m iotbench.scenarios.docgen --write docs/scenarios.md`); a test keeps
the two in step.
"""

from __future__ import annotations

from iotbench.net.ieee802154 import MAX_PAYLOAD_BYTES as MAX_802154_PAYLOAD
from iotbench.scenarios.fields import (
    NDN_DEVICE_PROFILES,
    OPTIONAL,
    REQUIRED,
    Field,
    Invalid,
    Section,
    Table,
    Tagged,
)

# The protocols the publish workload runs (world/workloads/publish/workload.py).
PUBLISH_PROTOCOLS = ("coap", "mqttsn", "ndn")

from iotbench.scenarios.protocol_schema import PROTOCOL  # noqa: E402
from iotbench.scenarios.radio_schema import (  # noqa: E402
    DEVICE,
    INTERFERER,
    LOWPAN,
    MAC,
    NODES,
    RADIO,
    ROLES,
    ROUTING,
    SECOND,
    TOPOLOGIES,
    UPLINK,
    check_radio_network,
    fill_radio_sections,
    is_radio,
)

NAME_PATTERN = r"[a-z0-9][a-z0-9-]*"
NAME_DOC = "lowercase letters, digits and '-', starting with a letter or digit"

# --- network ------------------------------------------------------------------

MIN_MTU = {4: 68, 6: 1280}  # RFC 791 and RFC 8200 minimum link MTUs


def _check_mtu(network: Table) -> None:
    if is_radio(network):
        return
    link = network["link"]
    mtu = link["mtu_bytes"]
    if link["layer"] == "ieee802154":
        if mtu > MAX_802154_PAYLOAD:
            raise Invalid(
                ("link", "mtu_bytes"),
                f"{mtu} is out of range: an 802.15.4 frame carries at most "
                f"{MAX_802154_PAYLOAD} payload bytes",
            )
        return
    ip = network["ip_version"]
    if mtu < MIN_MTU[ip]:
        raise Invalid(
            ("link", "mtu_bytes"),
            f"{mtu} is out of range: must be >= {MIN_MTU[ip]} for IPv{ip}",
        )


LINK = Section(
    doc="The point-to-point link between client and server (both directions alike).",
    fields={
        "layer": Field(
            "str",
            "ip: IPv4/IPv6 hosts; ieee802154: nodes that put their protocol straight into "
            "802.15.4 frames (NDN), with real MAC headers and the PHY's 6 bytes of air time.",
            "ip",
            choices=("ip", "ieee802154"),
        ),
        "rate_bps": Field("int", "Link rate in bit/s; 0 = no serialisation delay.", 0, ge=0),
        "delay_s": Field("float", "Propagation delay in each direction, seconds.", 0.0, ge=0),
        "mtu_bytes": Field(
            "int",
            "IP MTU in bytes (>= 68 for IPv4, >= 1280 for IPv6); for ieee802154 the payload "
            "a frame may carry (<= 104).",
            1500,
            ge=1,
            le=65535,
        ),
        "queue_packets": Field("int", "Drop-tail queue limit of each direction.", 100, ge=1),
    },
)


def _probability(doc: str, default: object = REQUIRED) -> Field:
    return Field("float", doc, default, ge=0, le=1, redraw=True)


def _seconds(doc: str) -> Field:
    return Field("float", doc, ge=0, redraw=True)


LOSS = Tagged(
    doc="Packet loss model.",
    tag="model",
    tag_doc="Loss model.",
    variants={
        "none": Section("No loss.", {}),
        "bernoulli": Section(
            "Each packet is lost independently with probability p.",
            {"p": _probability("Loss probability.")},
        ),
        "gilbert-elliott": Section(
            "Two-state Markov loss: a good and a bad state with their own loss rates.",
            {
                "p_good_to_bad": _probability("Transition probability good -> bad per packet."),
                "p_bad_to_good": _probability("Transition probability bad -> good per packet."),
                "loss_good": _probability("Loss probability in the good state.", 0.0),
                "loss_bad": _probability("Loss probability in the bad state.", 1.0),
            },
        ),
    },
)


def _check_uniform_delay(delay: Table) -> None:
    low, high = delay["low_s"], delay["high_s"]
    if isinstance(low, float) and isinstance(high, float) and low > high:
        raise Invalid(("high_s",), f"{high:g} is out of range: must be >= low_s ({low:g})")


DELAY = Tagged(
    doc="Extra one-way delay added to each packet.",
    tag="model",
    tag_doc="Delay model.",
    variants={
        "none": Section("No extra delay.", {}),
        "constant": Section("The same delay for every packet.", {"s": _seconds("Delay, seconds.")}),
        "uniform": Section(
            "Delay drawn uniformly from [low_s, high_s] per packet.",
            {"low_s": _seconds("Lowest delay, seconds."), "high_s": _seconds("Highest delay.")},
            checks=(_check_uniform_delay,),
        ),
        "normal": Section(
            "Normally distributed delay, clipped at 0.",
            {
                "mean_s": _seconds("Mean delay, seconds."),
                "stddev_s": _seconds("Standard deviation."),
            },
        ),
    },
)


def _check_window(outages: Table) -> None:
    a, b = outages["window_s"]
    if a > b:
        raise Invalid(("window_s",), f"[{a:g}, {b:g}] is empty: need a <= b")


_COUNT = Field("int", "Number of outages.", ge=0)
_DURATION = Field("float", "Length of each outage, seconds.", gt=0)

OUTAGES = Tagged(
    doc="Periods during which the link drops every packet.",
    tag="model",
    tag_doc="Outage model.",
    variants={
        "none": Section("No outages.", {}),
        "scheduled": Section(
            "Outages at given times.",
            {
                "start_s": Field(
                    "list", "Start time of each outage, seconds.", item=Field("float", "", ge=0)
                ),
                "duration_s": _DURATION,
            },
        ),
        "random": Section(
            "`count` outages starting at uniformly random times within `window_s`.",
            {
                "count": _COUNT,
                "duration_s": _DURATION,
                "window_s": Field(
                    "list",
                    "[a, b]: outage starts are drawn from this interval, seconds.",
                    item=Field("float", "", ge=0),
                    length=2,
                ),
            },
            checks=(_check_window,),
        ),
        "random-items": Section(
            "`count` outages, each starting when a randomly chosen workload item starts.",
            {"count": _COUNT, "duration_s": _DURATION},
        ),
    },
)

DIRECTION = Section(
    doc="Impairments of one link direction. Absent parts mean no impairment.",
    fields={"loss": LOSS, "delay": DELAY, "outages": OUTAGES},
    optional=True,
    name="network.impair.direction",
)

IMPAIR = Section(
    doc="Impairments per direction; `both` applies to each direction (a direction's own "
    "setting of a part wins over `both`).",
    fields={"to_server": DIRECTION, "to_client": DIRECTION, "both": DIRECTION},
    optional=True,
)

NETWORK = Section(
    doc="The network: two nodes on a point-to-point link, or a radio network of many.",
    fields={
        "topology": Field(
            "str",
            "pair: a client and a server on one point-to-point link (link, impair); line, star, "
            "grid, random, building, file: 802.15.4 nodes on a shared radio (nodes, roles, "
            "radio, mac, lowpan, routing, interferers, uplink, second). Absent: pair.",
            OPTIONAL,
            choices=TOPOLOGIES,
        ),
        "ip_version": Field(
            "int", "IP version of the nodes (radio networks: 6, over 6LoWPAN).", 4, choices=(4, 6)
        ),
        "seed": Field(
            "int",
            "Seed of the network's random streams (loss, delay, outages, redraws). Absent: "
            "derived from the scenario seed, the repetition and the network settings, so runs "
            "that differ only in protocol meet the same network (common random numbers). "
            "Every key under `network` enters it, the uplink host's `cpu_slowdown` and "
            "`cost_spread` too: runs that differ in those meet different draws.",
            OPTIONAL,
            ge=0,
        ),
        "link": LINK,
        "impair": IMPAIR,
        "nodes": NODES,
        "roles": ROLES,
        "radio": RADIO,
        "mac": MAC,
        "lowpan": LOWPAN,
        "routing": ROUTING,
        "interferers": Field(
            "list",
            "External interferers (`[[network.interferers]]` tables).",
            OPTIONAL,
            item=INTERFERER,
        ),
        "uplink": UPLINK,
        "second": SECOND,
        "device": DEVICE,
    },
    prepare=fill_radio_sections,
    checks=(_check_mtu, check_radio_network),
)

# --- workload -----------------------------------------------------------------


def _check_workload(workload: Table) -> None:
    kind = workload["kind"]
    if kind == "group-query" and workload["path"] == "/":
        raise Invalid(("path",), "group-query: the members' resource path, e.g. '/s/t'")
    if kind in ("periodic", "poisson", "publish") and "interval_s" not in workload:
        raise Invalid(("interval_s",), f"missing required key for kind = {kind}: a number > 0")


WORKLOAD = Section(
    doc="What the client asks for and when.",
    fields={
        "kind": Field(
            "str",
            "object-download: fetch one object; periodic: a request every interval_s whether "
            "or not the last was answered; poisson: requests as a Poisson process, interval_s "
            "apart on average, whether or not the last was answered; sequential: each item "
            "starts when the previous ended; "
            "publish: every producer sends a reading to the client node (the gateway) every "
            "interval_s, from a random phase (coap: a PUT each; mqttsn: one session each, "
            "the topic registered once, a PUBLISH each); group-query: the client creates one entity of "
            "all producers on the gateway's Entity Manager (protocol.coap.em) and queries it "
            "`queries` times, each interval_s after the previous answer (S6).",
            choices=(
                "object-download",
                "periodic",
                "poisson",
                "sequential",
                "publish",
                "group-query",
            ),
        ),
        "items": Field(
            "int", "Number of data items (requests; publish: readings per producer).", 1, ge=1
        ),
        "interval_s": Field(
            "float",
            "Request interval (periodic; poisson: the mean gap), reading interval (publish), "
            "pause after an answer "
            "(group-query, default 1 s).",
            OPTIONAL,
            gt=0,
        ),
        "jitter": Field(
            "float",
            "publish: every wait (readings, requests, polls) is drawn uniformly from "
            "[m (1 - jitter), m (1 + jitter)] around its interval m, the first one too "
            "(S4's code: 0.5); 0: every wait is m, the first a random phase in [0, m).",
            0.0,
            ge=0,
            le=0.99,
        ),
        "duration_s": Field(
            "float",
            "publish: how long the producers publish; each takes duration_s / (its mean "
            "interval) readings, instead of `items`.",
            OPTIONAL,
            gt=0,
        ),
        "series_points": Field(
            "int",
            "publish on a radio network: the time series the results store keeps "
            "(goodput, energy per node, NDN tables; docs/metrics.md) have a point at the "
            "end of each of this many equal spans of the publishing period; absent: 60.",
            OPTIONAL,
            ge=1,
            le=10000,
        ),
        "queries": Field("int", "group-query: queries of the entity.", 50, ge=1),
        "query_start_s": Field(
            "float",
            "group-query: when the first query goes (the entity is created at start_s); "
            "absent: as soon as the entity exists.",
            OPTIONAL,
            ge=0,
        ),
        "entity": Field(
            "str",
            "group-query: flat, one entity of every member on the gateway's EM; nested "
            "(with network.second), one entity of each network's members on its own "
            "gateway's EM, both members of the entity the client queries on the first "
            "gateway's EM, which asks them at once.",
            "flat",
            choices=("flat", "nested"),
        ),
        "em_on": Field(
            "str",
            "group-query: where the Entity Managers run: gateway, on the radio border "
            "router; uplink, on the gateway's host behind network.uplink (S6's Linux host "
            "behind Contiki's rpl-border-router on a serial line), the client beside it; "
            "absent: gateway.",
            OPTIONAL,
            choices=("gateway", "uplink"),
        ),
        "member_hops_mean": Field(
            "float",
            "group-query: pick the producer_count members by hop count so that their mean "
            "is this (S6's averages per group size); absent: the producers as drawn.",
            OPTIONAL,
            ge=1,
        ),
        "member_hops_max": Field(
            "int",
            "group-query, with member_hops_mean: the members' hop counts reach this and no "
            "more (S6's maxima per group size, Table 7); absent: any level the network has.",
            OPTIONAL,
            ge=1,
        ),
        "coap_exchange": Field(
            "str",
            "publish with coap: put, the producer PUTs each reading to the gateway; get, the "
            "gateway polls each producer's latest reading every poll_interval_s; observe, the "
            "gateway observes each producer's resource (RFC 7641), NON notifications.",
            "put",
            choices=("put", "get", "observe"),
        ),
        "ndn_exchange": Field(
            "str",
            "publish with ndn: pull, the gateway asks each producer for its readings by name "
            "(/<prefix>/<counter>) every poll_interval_s; inot, Interest Notification: the "
            "producer sends each reading inside an Interest to the gateway, which answers "
            "with an empty Data; hopp, HoP-and-Pull: names go up the tree hop by hop, each "
            "hop pulling the Data, to the gateway's content proxy (docs/ndn.md).",
            "pull",
            choices=("pull", "inot", "hopp"),
        ),
        "poll_interval_s": Field(
            "float",
            "publish, coap_exchange = get or ndn_exchange = pull: how often the gateway "
            "polls each producer; absent: interval_s.",
            OPTIONAL,
            gt=0,
        ),
        "drain_s": Field(
            "float",
            "publish: how long the run goes on after the last reading was taken, for the "
            "last ones to arrive or be given up.",
            100.0,
            ge=0,
        ),
        "resource": Field(
            "str",
            "What the server returns: a voltage readout, a JSON reading or an object of "
            "object_size_bytes bytes.",
            "voltage",
            choices=("voltage", "json", "object"),
        ),
        "object_size_bytes": Field("int", "Object size (resource = object).", 100, ge=0),
        "path": Field(
            "str", "URI path of the resource.", "/", pattern=r"/\S*", pattern_doc="the form '/...'"
        ),
        "start_s": Field("float", "Virtual time of the first request, seconds.", 0.0, ge=0),
    },
    checks=(_check_workload,),
)

# --- report -------------------------------------------------------------------

PLOT = Section(
    doc="One plot.",
    fields={
        "x": Field("str", "Sweep axis on the x axis."),
        "y": Field("str", "Metric on the y axis."),
        "line": Field("str", "Sweep axis: one line (or bar group member) per value.", OPTIONAL),
        "kind": Field("str", "Plot kind.", "line", choices=("line", "bar")),
        "title": Field("str", "Plot title (default: 'y vs x').", OPTIONAL),
        "x_values": Field(
            "list",
            "Only these values of the x axis, in this order (default: all).",
            OPTIONAL,
        ),
        "log_y": Field("bool", "Logarithmic y axis.", False),
    },
)

SERIES_KINDS = ("cdf", "box", "time", "scatter", "nodes")

SERIES_PLOT = Section(
    doc="One figure from the runs' time series and distributions (report/series_plots.py).",
    fields={
        "series": Field("str", "The series drawn (docs/metrics.md, 'Time series')."),
        "kind": Field(
            "str",
            "cdf: a distribution per `line` value; box: its values as boxes; time: over "
            "time; scatter: x against y, dots sized by multiplicity; nodes: every node's "
            "line, coloured by `color_by`.",
            choices=SERIES_KINDS,
        ),
        "line": Field(
            "str", "Sweep axis: one line, box or (scatter, nodes) panel per value.", OPTIONAL
        ),
        "reference": Field(
            "str", "box and time: a series drawn as the optimum to compare with.", OPTIONAL
        ),
        "color_by": Field("str", "nodes: the per-node series that colours the lines.", OPTIONAL),
        "relative": Field(
            "bool", "nodes: draw each node's y minus the mean of all nodes at that x.", False
        ),
        "filter": Field(
            "table",
            "Only these values of some axes (axis = [values]), as `run --filter` keeps them.",
            {},
        ),
        "title": Field("str", "Figure title.", OPTIONAL),
        "x_label": Field("str", "x axis label (default: the series').", OPTIONAL),
        "y_label": Field("str", "y axis label (default: the series').", OPTIONAL),
        "log_x": Field("bool", "Logarithmic x axis.", False),
        "log_y": Field("bool", "Logarithmic y axis.", False),
    },
)

REPORT = Section(
    doc="What the summary tables and plots show.",
    fields={
        "metrics": Field(
            "list", "Metrics in the summary table (default: all).", [], item=Field("str", "")
        ),
        "plots": Field("list", "Plots (`[[report.plots]]` tables).", [], item=PLOT),
        "series": Field(
            "list",
            "Figures from the runs' time series (`[[report.series]]` tables).",
            [],
            item=SERIES_PLOT,
        ),
        "topology": Field(
            "bool",
            "Draw the radio network and its routing tree (as `iotbench topology` does).",
            False,
        ),
    },
)

QUICK = Section(
    doc="A reduced version of the scenario for a first look, which `iotbench "
    "reproduce --quick` runs: fewer items or a shorter run, fewer repetitions.",
    fields={
        "set": Field(
            "table",
            "Dotted keys and their values, as `--set` takes them "
            '(e.g. `set = { "workload.items" = 100 }`).',
            {},
        ),
        "repetitions": Field("int", "Runs per combination of axis values.", 1, ge=1),
        "filter": Field(
            "table",
            "Only these values of some axes, as `--filter` takes them "
            "(e.g. `filter = { wifi_mbps = [0, 10, 28.5] }`); absent: every value.",
            {},
        ),
    },
)

# --- the whole file -----------------------------------------------------------

# The keys one simulation reads: what `run_one` gets, what the config hash
# covers, and all that a preset, a value axis or --set may change.
RUN_KEYS = ("max_sim_time_s", "network", "workload", "protocol")


def _check_publish(document: Table) -> None:
    name = document["protocol"]["name"]
    kind = document["workload"]["kind"]
    if kind == "group-query":
        if name != "coap":
            raise Invalid(("workload", "kind"), "group-query is a workload of coap")
        if document["network"].get("roles", {}).get("client") != "uplink":
            raise Invalid(
                ("network", "roles", "client"),
                "group-query: the client is the host behind the gateway's uplink ('uplink')",
            )
        if document["workload"]["entity"] == "nested" and not document["network"].get("second"):
            raise Invalid(
                ("workload", "entity"),
                "nested needs a second radio network (a [network.second] section): one "
                "entity per gateway",
            )
    stepped = {
        len(spec["earlier_rates_bps"])
        for spec in document["network"].get("interferers") or ()
        if spec.get("earlier_rates_bps") is not None
    }
    if stepped and kind != "group-query":
        raise Invalid(
            ("network", "interferers", "earlier_rates_bps"),
            "a stepped sweep's steps are the group-query workload's queries: only it steps",
        )
    if len(stepped) > 1 or (
        stepped
        and any(s.get("earlier_rates_bps") is None for s in document["network"]["interferers"])
    ):
        raise Invalid(
            ("network", "interferers", "earlier_rates_bps"),
            "every interferer of a stepped sweep has as many earlier rates as the others",
        )
    if document["workload"]["kind"] == "publish" and name not in PUBLISH_PROTOCOLS:
        raise Invalid(
            ("workload", "kind"),
            f"publish is a workload of {', '.join(PUBLISH_PROTOCOLS)}; protocol {name!r} "
            "runs object-download, periodic and sequential workloads",
        )
    workload = document["workload"]
    if workload.get("jitter") and kind != "publish":
        raise Invalid(("workload", "jitter"), "only the publish workload uses it")
    if workload.get("series_points") is not None and kind != "publish":
        raise Invalid(("workload", "series_points"), "only the publish workload uses it")
    if workload.get("duration_s") is not None and kind != "publish":
        raise Invalid(("workload", "duration_s"), "only the publish workload uses it")
    if kind == "publish" and name == "ndn" and not is_radio(document["network"]):
        raise Invalid(
            ("network", "topology"),
            "publish with ndn runs on a radio network (a forwarder on every node of the "
            "routing tree), not on a pair",
        )


def _check_layer(document: Table) -> None:
    """Protocols over IP need IP hosts; NDN runs straight on 802.15.4 frames."""
    if is_radio(document["network"]):
        return  # NDN on the frames, every other protocol over IPv6 and 6LoWPAN
    name = document["protocol"]["name"]
    layer = document["network"]["link"]["layer"]
    wanted = "ieee802154" if name == "ndn" else "ip"
    if layer != wanted:
        raise Invalid(
            ("network", "link", "layer"),
            f"protocol {name!r} needs layer = {wanted!r}, not {layer!r}",
        )


def _check_ndn_profiles(document: Table) -> None:
    """An NDN gateway forwards Interests: its profile must price NDN's operations."""
    device = document["network"].get("device") or {}
    profile = device.get("gateway_profile")
    if document["protocol"]["name"] == "ndn" and profile not in (None, *NDN_DEVICE_PROFILES):
        raise Invalid(
            ("network", "device", "gateway_profile"),
            f"{profile!r} prices no NDN operation; an NDN gateway takes one of "
            f"{', '.join(NDN_DEVICE_PROFILES)}",
        )


DOCUMENT = Section(
    doc="A scenario file.",
    fields={
        "extends": Field(
            "str",
            "A built-in scenario or base (`bases/NAME`), or a .toml path relative to this file, "
            "that this file is merged over (see 'Sharing a base: extends').",
            OPTIONAL,
        ),
        "name": Field("str", "Scenario name.", pattern=NAME_PATTERN, pattern_doc=NAME_DOC),
        "description": Field("str", "One line saying what the scenario measures."),
        "study": Field("str", "The study it reproduces (S1, S2 ...).", OPTIONAL),
        "seed": Field("int", "Base seed; each run's seed is derived from it.", 1, ge=0),
        "repetitions": Field("int", "Runs per combination of axis values.", 1, ge=1),
        "max_sim_time_s": Field(
            "float", "Safety bound on the virtual time of a run.", 86400.0, gt=0
        ),
        "network": NETWORK,
        "workload": WORKLOAD,
        "protocol": PROTOCOL,
        "report": REPORT,
        "quick": QUICK,
        "axes": Field("table", "Sweep axes (see 'Sweep axes').", OPTIONAL),
    },
    checks=(_check_layer, _check_publish, _check_ndn_profiles),
)

RUN_CONFIG = Section(
    doc="The part of a scenario that a run's config holds.",
    fields={key: DOCUMENT.fields[key] for key in RUN_KEYS},
)
