"""Device profiles: what NDN operations cost a node in CPU time, and how much RAM it has.

A profile is data for the simulator: a node spends `cost_s(op)` of virtual
time on an operation, and its forwarder's tables are bounded by the RAM
budget (`forwarder_config()`).

Sources and estimates:

- `m3` (ARM Cortex-M3 at 72 MHz, 64 KB RAM, 512 KB flash: the FIT IoT-LAB
  M3 node, STM32F103REY, used by S4 and S5). The three figures S5 measured
  are used as they are: ECDSA-SHA256 sign 270 ms, verify 295 ms (micro-ecc,
  secp256r1), creating an HMAC-signed Data 1.3 ms. The cryptographic
  primitives come from published software measurements on Cortex-M3 cores,
  their cycles carried to 72 MHz (cited at `_M3_AES_BLOCK_S`): one SHA-256
  block 6,182 cycles (86 us), one AES-128 block 2,368 cycles (33 us, RIOT's
  AES), so CCM (two AES per block) 66 us per block. The others are estimates:
  TLV encoding and the name operations are a few hundred to a few thousand
  cycles (tens of us); a forwarding decision (PIT, FIB and CS lookups over
  small tables) about 15,000 cycles (200 us). HMAC verification is the HMAC
  part of the 1.3 ms Data creation minus the encoding, estimated at 0.5 ms.
- `samr21` (Atmel SAM R21: ARM Cortex-M0+ at 48 MHz, 32 KB RAM, 256 KB
  flash; a common RIOT board with an on-chip 802.15.4 radio). Estimated from
  `m3` by clock (72/48 = 1.5x) and by instruction set: the M0+ has no 32x32 ->
  64-bit multiply, which doubles the cycles of big-number arithmetic
  (ECDSA), and runs other code about 1.2x slower per clock.
- `a8` (ARM Cortex-A8 at 600 MHz, 256 MB RAM: the FIT IoT-LAB A8 node, S4's
  gateway host, on Linux): the messages its applications handle are the
  study's programs, measured on this machine by bench/gateway_costs.py and
  scaled by CoreMark (14.2, docs/performance.md): aiocoap 0.3 on Python
  answering a PUT, 12 ms (CON 12.4, NON 11.7: `coap_message`), and taking an
  Observe notification, 3.0 ms (`coap_notification`); a C MQTT-SN broker's
  PUBLISH, 0.093 ms at QoS 0 (`mqttsn_message`; mosquitto standing in for
  rsmb; QoS 1's acknowledgement adds 0.14 ms, after the PUBLISH is handled,
  not charged). Its other operations are `m3`'s divided by the clock ratio
  (600/72) and by 2 for the work per clock (dual issue, caches; the M3 runs
  from flash with wait states). Tables bounded by generous defaults.
- `rm090` (Rmoni RM090: TI MSP430F5437 at 16 MHz, 16 KB RAM, CC2520;
  S6's nodes running Contiki): measured, the real software (Contiki at the
  2014 snapshot S6 ran, built for the `wismote` platform, the same MCU and
  radio) run in MSPSim, the MSP430 emulator Cooja uses: forwarding a frame
  (`ip_forward`) 1.81 ms, a CoAP message in or out at an Erbium member
  (`coap_message`) 1.14 ms (docs/studies/s6.md, "Time on the nodes"). It
  prices those two only (`partial`): no NDN runs on it.
- `em-host` (S6's Entity Manager host): `host`, with the time per CoAP
  message of iotbench's own EM (apps/em) measured on this project's machine
  by bench/em_costs.py, 21.5 us.
- `host` (a current x86-64 machine running a C forwarder such as NFD):
  ECDSA P-256 sign about 30 us and verify about 90 us (OpenSSL), HMAC and
  SHA-256 of a small packet about 1 us, a forwarding decision about 5 us.
  Tables are bounded only by generous defaults.

The IP stacks' operations (S4), on `m3` (estimates): forwarding a packet at
6LoWPAN/IPv6 (`ip_forward`, 200 us: header parsing, a route lookup and the
frame rebuilt, the work of an NDN forwarding decision), and handling one
CoAP or MQTT-SN message at an end host, through UDP, IPv6 and 6LoWPAN
(`coap_message`, `coap_notification`, `mqttsn_message`, 300 us: the NDN
consumer's Interest creation and forwarding decision together cost 350 us).

RAM budgets: S5 gives RIOT's NDN stack a 24 KB Content Store on the M3; the
PIT and FIB budgets assume about 128 bytes per PIT entry (an Interest of
~80 bytes plus records and timers) and 64 bytes per FIB entry.

Packet memory (`pktbuf_bytes`, net/pktbuf.py: what queued frames and
datagrams in reassembly hold, when a radio network gives its nodes a device
with `network.device`): on `m3` and `samr21` RIOT's GNRC packet buffer at its
default size, 6,144 bytes (CONFIG_GNRC_PKTBUF_SIZE: two incoming and two
outgoing 1,280-byte packets and 1 KiB of metadata); on `a8` and `host`, Linux,
whose default socket buffer (net.core.wmem_default, 212,992 bytes) bounds
what one application has in flight; the interface queue behind it holds
1,000 frames, more than a 802.15.4 channel drains in seconds.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from iotbench.proto.crypto_work import Work

from .forwarder import ForwarderConfig

__all__ = ["OPERATIONS", "PROFILES", "DeviceProfile", "get_profile"]

#: Operation names a profile prices (seconds each).
OPERATIONS = (
    "name_from_uri",
    "name_get_component",
    "name_append",
    "interest_create",
    "interest_get_name",
    "data_create_digest",
    "data_create_unsigned",
    "data_create_hmac",
    "data_create_ecdsa",
    "data_get_name",
    "data_get_content",
    "hmac_verify",
    "ecdsa_sign",
    "ecdsa_verify",
    "sha256_block",
    "aes_ccm_block",
    "forward_packet",
    # The IP stacks (S4's CoAP and MQTT-SN variants), when a radio network gives its
    # nodes a CPU (network.device):
    "ip_forward",
    "coap_message",
    "coap_notification",
    "mqttsn_message",
)

#: Where a measured spread of an operation's CPU time is kept: its time relative
#: to the median at these probabilities (the minimum, every 5 %, p99, p99.9 and
#: the maximum), printed so by `bench/gateway_costs.py --answers`.
SPREAD_PROBABILITIES = (*(i / 20 for i in range(20)), 0.99, 0.999, 1.0)


@dataclass(frozen=True)
class CostSpread:
    """A measured distribution of an operation's CPU time relative to its median:
    `knots[i]` is the time / median at SPREAD_PROBABILITIES[i]. Drawn by inverting
    the piecewise-linear distribution function through the knots."""

    knots: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.knots) != len(SPREAD_PROBABILITIES):
            raise ValueError(
                f"a cost spread has {len(SPREAD_PROBABILITIES)} knots, not {len(self.knots)}"
            )
        if any(b < a for a, b in zip(self.knots, self.knots[1:])) or self.knots[0] <= 0:
            raise ValueError(f"a cost spread's knots must be positive and rising: {self.knots}")

    def factor(self, u: float) -> float:
        """The time / median at probability `u` (0 <= u <= 1)."""
        probabilities, knots = SPREAD_PROBABILITIES, self.knots
        i = bisect.bisect_right(probabilities, u) - 1
        if i >= len(knots) - 1:
            return knots[-1]
        p0, p1 = probabilities[i], probabilities[i + 1]
        return knots[i] + (knots[i + 1] - knots[i]) * (u - p0) / (p1 - p0)

    def mean(self) -> float:
        """The mean time / median (the distribution is linear between knots)."""
        probabilities, knots = SPREAD_PROBABILITIES, self.knots
        return sum(
            (p1 - p0) * (k0 + k1) / 2
            for p0, p1, k0, k1 in zip(probabilities, probabilities[1:], knots, knots[1:])
        )


PIT_ENTRY_BYTES = 128
FIB_ENTRY_BYTES = 64


@dataclass(frozen=True)
class DeviceProfile:
    name: str
    description: str
    cpu_hz: int
    ram_bytes: int
    flash_bytes: int
    costs_s: Mapping[str, float]
    cs_max_bytes: int
    pit_budget_bytes: int
    fib_budget_bytes: int
    pktbuf_bytes: int  # packet memory of the network stack (net/pktbuf.py)

    #: Operations a profile may leave out: a device measured for its IP stack only
    #: (rm090) has no NDN or cryptography costs, and asking for one is an error.
    partial: bool = False
    #: The IP stacks' message costs price a message received together with what
    #: is sent in answer (a8: measured per PUT answered, per notification taken),
    #: so an application's datagrams are charged when they arrive, not again when
    #: its answers leave. Otherwise (m3, rm090: per message in or out) both are.
    answers_included: bool = False
    #: Operations whose CPU time each message draws from a measured spread
    #: (CostSpread) instead of charging its median: empty unless a run asks
    #: for it (`with_measured_spread`).
    spreads: Mapping[str, CostSpread] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = set(self.costs_s) - set(OPERATIONS)
        missing = set(OPERATIONS) - set(self.costs_s)
        if unknown or (missing and not self.partial):
            raise ValueError(
                f"profile {self.name!r}: unknown {sorted(unknown)}, no cost for {sorted(missing)}"
            )
        object.__setattr__(self, "costs_s", MappingProxyType(dict(self.costs_s)))

    def cost_s(self, operation: str) -> float:
        """CPU time of one `operation` (one of OPERATIONS)."""
        try:
            return self.costs_s[operation]
        except KeyError:
            if operation in OPERATIONS:
                raise ValueError(
                    f"device profile {self.name!r} has no cost for {operation!r}: it was "
                    f"measured for {', '.join(sorted(self.costs_s))} only"
                ) from None
            raise ValueError(
                f"unknown operation {operation!r}; known: {', '.join(OPERATIONS)}"
            ) from None

    def with_measured_spread(self) -> DeviceProfile:
        """This profile, its measured operations' times drawn from their spread."""
        measured = MEASURED_SPREADS.get(self.name)
        if not measured:
            raise ValueError(
                f"device profile {self.name!r} has no measured spread; "
                f"measured: {', '.join(sorted(MEASURED_SPREADS))}"
            )
        return dataclasses.replace(self, spreads=measured)

    def slowed(self, factor: float) -> DeviceProfile:
        """This profile on a processor `factor` times slower (every cost times it)."""
        if not factor > 0:
            raise ValueError(f"a CPU slowdown must be above 0, not {factor!r}")
        return dataclasses.replace(
            self, costs_s={op: cost * factor for op, cost in self.costs_s.items()}
        )

    def crypto_s(self, work: Work) -> float:
        """CPU time of a security layer's `work` (proto/crypto_work.py): its AES
        calls at half `aes_ccm_block` (which prices CCM's two AES calls per
        block) and its SHA-256 blocks at `sha256_block`."""
        aes_s = self.costs_s["aes_ccm_block"] / 2
        return work.aes * aes_s + work.sha256_blocks * self.costs_s["sha256_block"]

    @property
    def pit_max_entries(self) -> int:
        return max(1, self.pit_budget_bytes // PIT_ENTRY_BYTES)

    @property
    def fib_max_entries(self) -> int:
        return max(1, self.fib_budget_bytes // FIB_ENTRY_BYTES)

    def forwarder_config(self, **overrides) -> ForwarderConfig:
        """A ForwarderConfig whose tables fit this device (keyword arguments override)."""
        config = ForwarderConfig(
            pit_max_entries=self.pit_max_entries,
            fib_max_entries=self.fib_max_entries,
            cs_max_bytes=self.cs_max_bytes,
        )
        return dataclasses.replace(config, **overrides)


_US = 1e-6
_MS = 1e-3

# The cryptographic primitives on the M3, from published software measurements on
# Cortex-M3 cores, their cycle counts carried to the M3's 72 MHz (the cores differ in
# flash wait states, which this ignores; docs/performance.md says more):
# - one AES-128 block: RIOT's own AES (sys/crypto, T-tables in flash, gcc -O2) takes
#   74 us on an STM32L151 at 32 MHz, 2,368 cycles (RIOT forum, "AES crypto
#   optimizations, speed and size", forum.riot-os.org/t/2140). tinydtls's Rijndael
#   is the same table-driven design. AES-CCM takes two per 16-byte block.
# - one SHA-256 block: 1.15 us per byte on an Arduino Due (SAM3X8E, a Cortex-M3) at
#   84 MHz, 73.6 us per 64-byte block, 6,182 cycles (rweather/arduinolibs,
#   doc/crypto.dox, "Performance on ARM"); no RIOT or tinydtls figure was found.
_M3_HZ = 72_000_000
_M3_AES_BLOCK_S = 74 * _US * 32e6 / _M3_HZ
_M3_SHA256_BLOCK_S = 1.15 * _US * 64 * 84e6 / _M3_HZ

_M3_COSTS = {
    "name_from_uri": 40 * _US,
    "name_get_component": 3 * _US,
    "name_append": 10 * _US,
    "interest_create": 150 * _US,
    "interest_get_name": 5 * _US,
    "data_create_digest": 0.9 * _MS,
    # CCN-lite's unsigned Data (S4): the TLV encoding alone, as an Interest's.
    "data_create_unsigned": 150 * _US,
    "data_create_hmac": 1.3 * _MS,  # S5, measured
    "data_create_ecdsa": 270 * _MS + 0.8 * _MS,  # S5's sign plus the encoding
    "data_get_name": 5 * _US,
    "data_get_content": 5 * _US,
    "hmac_verify": 0.5 * _MS,
    "ecdsa_sign": 270 * _MS,  # S5, measured
    "ecdsa_verify": 295 * _MS,  # S5, measured
    "sha256_block": _M3_SHA256_BLOCK_S,  # 85.9 us, see above
    "aes_ccm_block": 2 * _M3_AES_BLOCK_S,  # 65.8 us, see above
    "forward_packet": 200 * _US,
    "ip_forward": 200 * _US,
    "coap_message": 300 * _US,
    "coap_notification": 300 * _US,
    "mqttsn_message": 300 * _US,
}

_ECC_OPS = ("ecdsa_sign", "ecdsa_verify", "data_create_ecdsa")
# Cortex-M0+ at 48 MHz versus Cortex-M3 at 72 MHz: clock, then per-clock efficiency.
_SAMR21_COSTS = {
    op: cost * 1.5 * (2.0 if op in _ECC_OPS else 1.2) for op, cost in _M3_COSTS.items()
}

_HOST_COSTS = {
    "name_from_uri": 0.5 * _US,
    "name_get_component": 0.05 * _US,
    "name_append": 0.1 * _US,
    "interest_create": 0.5 * _US,
    "interest_get_name": 0.05 * _US,
    "data_create_digest": 1.5 * _US,
    "data_create_unsigned": 0.5 * _US,
    "data_create_hmac": 2 * _US,
    "data_create_ecdsa": 31 * _US,
    "data_get_name": 0.05 * _US,
    "data_get_content": 0.05 * _US,
    "hmac_verify": 1 * _US,
    "ecdsa_sign": 30 * _US,
    "ecdsa_verify": 90 * _US,
    "sha256_block": 0.1 * _US,
    "aes_ccm_block": 0.05 * _US,
    "forward_packet": 5 * _US,
    "ip_forward": 5 * _US,
    "coap_message": 5 * _US,
    "coap_notification": 5 * _US,
    "mqttsn_message": 5 * _US,
}

# Cortex-A8 at 600 MHz versus Cortex-M3 at 72 MHz: clock, then about twice the work
# per clock (dual issue, caches in front of its memory, where the M3 runs from flash).
_A8_SPEEDUP = (600 / 72) * 2.0
_A8_COSTS = {
    **{op: cost / _A8_SPEEDUP for op, cost in _M3_COSTS.items()},
    # The study's gateway software, measured (bench/gateway_costs.py).
    "coap_message": 12.0 * _MS,
    "coap_notification": 3.0 * _MS,
    "mqttsn_message": 0.093 * _MS,
}

# Contiki (the 2014 snapshot S6 ran) on an RM090's MSP430F5437, measured: the real
# software built for Contiki's `wismote` platform (the same MCU at the 16 MHz its
# port sets, and the RM090's CC2520 radio) and run in MSPSim, the MSP430 emulator
# Cooja uses, counting every instruction's cycles from the CC2520's receive
# interrupt to the transmit strobe of what goes out (docs/studies/s6.md,
# "Time on the nodes"): forwarding a unicast frame, 1.79 to 1.82 ms; a member
# taking a CON GET for /s/t and handing its piggybacked response to the radio,
# 2.28 ms, which the model charges as two messages of 1.14 ms (one in, one out).
_RM090_COSTS = {
    "ip_forward": 1.81 * _MS,
    "coap_message": 1.14 * _MS,
}

PROFILES: dict[str, DeviceProfile] = {
    "m3": DeviceProfile(
        name="m3",
        description="ARM Cortex-M3 72 MHz, 64 KB RAM (FIT IoT-LAB M3, STM32F103REY)",
        cpu_hz=_M3_HZ,
        ram_bytes=64 * 1024,
        flash_bytes=512 * 1024,
        costs_s=_M3_COSTS,
        cs_max_bytes=24 * 1024,
        pit_budget_bytes=4 * 1024,
        fib_budget_bytes=2 * 1024,
        pktbuf_bytes=6144,
    ),
    "samr21": DeviceProfile(
        name="samr21",
        description="ARM Cortex-M0+ 48 MHz, 32 KB RAM (Atmel SAM R21)",
        cpu_hz=48_000_000,
        ram_bytes=32 * 1024,
        flash_bytes=256 * 1024,
        costs_s=_SAMR21_COSTS,
        cs_max_bytes=8 * 1024,
        pit_budget_bytes=2 * 1024,
        fib_budget_bytes=1024,
        pktbuf_bytes=6144,
    ),
    "a8": DeviceProfile(
        name="a8",
        description="ARM Cortex-A8 600 MHz, 256 MB RAM (FIT IoT-LAB A8, TI AM3505)",
        cpu_hz=600_000_000,
        ram_bytes=256 * 1024**2,
        flash_bytes=256 * 1024**2,
        costs_s=_A8_COSTS,
        cs_max_bytes=1024 * 1024,
        pit_budget_bytes=4096 * PIT_ENTRY_BYTES,
        fib_budget_bytes=4096 * FIB_ENTRY_BYTES,
        pktbuf_bytes=212_992,
        answers_included=True,
    ),
    "rm090": DeviceProfile(
        name="rm090",
        description="TI MSP430F5437 16 MHz, 16 KB RAM, CC2520 (Rmoni RM090) running Contiki",
        cpu_hz=16_000_000,
        ram_bytes=16 * 1024,
        flash_bytes=256 * 1024,
        costs_s=_RM090_COSTS,
        # No NDN on these nodes: no Content Store, PIT or FIB.
        cs_max_bytes=0,
        pit_budget_bytes=0,
        fib_budget_bytes=0,
        # Contiki keeps packets in its MAC's queue buffers (QUEUEBUF_CONF_NUM 8,
        # network.mac.queue_frames) and one uIP buffer; their counts bound them, and
        # their bytes, 8 frames and one 1,280-byte datagram, bound nothing more.
        pktbuf_bytes=8 * 127 + 1280,
        partial=True,
    ),
    "host": DeviceProfile(
        name="host",
        description="x86-64 host running a C forwarder",
        cpu_hz=3_000_000_000,
        ram_bytes=8 * 1024**3,
        flash_bytes=0,
        costs_s=_HOST_COSTS,
        cs_max_bytes=16 * 1024 * 1024,
        pit_budget_bytes=65536 * PIT_ENTRY_BYTES,
        fib_budget_bytes=65536 * FIB_ENTRY_BYTES,
        pktbuf_bytes=212_992,
    ),
}

# S6's Entity Manager host: a Linux machine the study does not name. The EM is
# iotbench's own (apps/em; the study's code is not public), measured on this
# project's benchmark machine by bench/em_costs.py: 21.5 us of CPU per CoAP message
# it takes or sends (a 10-member unicast query: 24 messages). CPU ratio 1, our
# choice, as the study names no host: the EM's time is about 1 % of one member's
# exchange over the radio, so a host two or three times slower would change no
# figure measurably (docs/studies/s6.md, "Time on the nodes"). Its other
# operations are `host`'s.
PROFILES["em-host"] = dataclasses.replace(
    PROFILES["host"],
    name="em-host",
    description="Linux host running S6's Entity Manager (apps/em, Python), measured",
    costs_s={**_HOST_COSTS, "coap_message": 21.5 * _US},
)

# The spread of the a8's `coap_message`: the study's PUT server (aiocoap 0.3 on
# Python 3.6, printing each PUT) taking 1,000 PUTs one at a time, 25 to 75 ms
# apart as the study's producer sent them at 50 ms, its CPU time from one PUT to
# the next relative to the median (`python bench/gateway_costs.py --quick
# --peer-python <py3.6 with aiocoap 0.3> --answers 1000`, 2026-11-29,
# docs/performance.md); CON's and NON's quantiles averaged. A run that draws it
# charges the profile's median (12 ms) times a factor drawn from it.
MEASURED_SPREADS: dict[str, dict[str, CostSpread]] = {
    "a8": {
        "coap_message": CostSpread(
            (0.642, 0.799, 0.853, 0.885, 0.908, 0.925, 0.942, 0.956, 0.972, 0.986, 1.0, 1.011)
            + (1.029, 1.047, 1.067, 1.087, 1.114, 1.143, 1.184, 1.265, 1.504, 2.634, 2.634)
        ),
    },
}


def get_profile(name: str) -> DeviceProfile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown device profile {name!r}; known: {sorted(PROFILES)}") from None
