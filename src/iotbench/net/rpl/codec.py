"""RPL control messages (RFC 6550 section 6): DIS, DIO, DAO, DAO-ACK and their options.

Each message is the body of an ICMPv6 message of type 155 (net/icmpv6.py
adds the 4-byte header); the ICMPv6 code says which message it is. `encode`
gives (code, body); `decode(code, body)` the message, raising
`RplDecodeError` for anything malformed. Unknown options are skipped, as
section 6.7.1 says; the secure variants (codes 0x80 and up) are refused.

Bit layouts (RFC 6550 figures 13, 14, 16, 17, 18 and section 6.7):

    DIS      | Flags | Reserved | options...
    DIO      | InstanceID | Version | Rank (16) | G|0|MOP(3)|Prf(3) | DTSN |
             | Flags | Reserved | DODAGID (16 bytes) | options...
    DAO      | InstanceID | K|D|Flags(6) | Reserved | DAOSequence |
             | DODAGID (16 bytes, if D) | options...
    DAO-ACK  | InstanceID | D|Reserved(7) | DAOSequence | Status |
             | DODAGID (16 bytes, if D)
    option   | Type | Length (bytes that follow) | data   (Pad1: the type alone)
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

from iotbench.proto.errors import DecodeError
from iotbench.proto.octets import as_bytes

DIS, DIO, DAO, DAO_ACK = 0x00, 0x01, 0x02, 0x03
MESSAGE_NAMES: Final = {DIS: "dis", DIO: "dio", DAO: "dao", DAO_ACK: "dao_ack"}

PAD1, PADN, METRIC_CONTAINER, ROUTE_INFORMATION, DODAG_CONFIGURATION = 0, 1, 2, 3, 4
TARGET, TRANSIT, SOLICITED, PREFIX_INFORMATION, TARGET_DESCRIPTOR = 5, 6, 7, 8, 9

MOP_STORING = 2  # storing mode, no multicast support in the DIO sense
MOP_STORING_MULTICAST = 3  # storing mode with multicast (SMRF)
INFINITE_RANK: Final = 0xFFFF

_DIO = struct.Struct("!BBHBBBB16s")
_DAO = struct.Struct("!BBBB")
_DAO_ACK = struct.Struct("!BBBB")
_CONFIG = struct.Struct("!BBBBHHHBBH")


class RplDecodeError(DecodeError):
    """Bytes that are not a well-formed RPL control message."""


# Records below write out their __init__: compiled, it stores each field
# directly, where the one @dataclass generates is interpreted Python
# (tests/test_written_inits.py keeps it equal to the fields).


@dataclass(frozen=True)
class DodagConfiguration:
    """The DODAG Configuration option (6.7.6): the parameters the root decides."""

    authentication: bool = False
    path_control_size: int = 0
    dio_interval_doublings: int = 8
    dio_interval_min: int = 12
    dio_redundancy: int = 10
    max_rank_increase: int = 7 * 256
    min_hop_rank_increase: int = 256
    objective_code_point: int = 1  # 0: OF0 (RFC 6552), 1: MRHOF (RFC 6719)
    default_lifetime: int = 30
    lifetime_unit: int = 60  # seconds

    def __init__(
        self,
        authentication: bool = False,
        path_control_size: int = 0,
        dio_interval_doublings: int = 8,
        dio_interval_min: int = 12,
        dio_redundancy: int = 10,
        max_rank_increase: int = 7 * 256,
        min_hop_rank_increase: int = 256,
        objective_code_point: int = 1,
        default_lifetime: int = 30,
        lifetime_unit: int = 60,
    ) -> None:
        object.__setattr__(self, "authentication", authentication)
        object.__setattr__(self, "path_control_size", path_control_size)
        object.__setattr__(self, "dio_interval_doublings", dio_interval_doublings)
        object.__setattr__(self, "dio_interval_min", dio_interval_min)
        object.__setattr__(self, "dio_redundancy", dio_redundancy)
        object.__setattr__(self, "max_rank_increase", max_rank_increase)
        object.__setattr__(self, "min_hop_rank_increase", min_hop_rank_increase)
        object.__setattr__(self, "objective_code_point", objective_code_point)
        object.__setattr__(self, "default_lifetime", default_lifetime)
        object.__setattr__(self, "lifetime_unit", lifetime_unit)


@dataclass(frozen=True)
class Target:
    """The RPL Target option (6.7.7): a prefix (a /128 address, or a multicast group)."""

    prefix: bytes
    prefix_length: int = 128
    flags: int = 0

    def __init__(self, prefix: bytes, prefix_length: int = 128, flags: int = 0) -> None:
        object.__setattr__(self, "prefix", prefix)
        object.__setattr__(self, "prefix_length", prefix_length)
        object.__setattr__(self, "flags", flags)


@dataclass(frozen=True)
class Transit:
    """The Transit Information option (6.7.8); storing mode carries no parent address."""

    path_lifetime: int
    path_sequence: int = 0
    path_control: int = 0
    external: bool = False
    parent: bytes | None = None

    def __init__(
        self,
        path_lifetime: int,
        path_sequence: int = 0,
        path_control: int = 0,
        external: bool = False,
        parent: bytes | None = None,
    ) -> None:
        object.__setattr__(self, "path_lifetime", path_lifetime)
        object.__setattr__(self, "path_sequence", path_sequence)
        object.__setattr__(self, "path_control", path_control)
        object.__setattr__(self, "external", external)
        object.__setattr__(self, "parent", parent)


@dataclass(frozen=True)
class PrefixInformation:
    """The Prefix Information option (6.7.10)."""

    prefix: bytes
    prefix_length: int = 64
    on_link: bool = False
    autonomous: bool = True
    router_address: bool = False
    valid_lifetime: int = 0xFFFFFFFF
    preferred_lifetime: int = 0xFFFFFFFF

    def __init__(
        self,
        prefix: bytes,
        prefix_length: int = 64,
        on_link: bool = False,
        autonomous: bool = True,
        router_address: bool = False,
        valid_lifetime: int = 0xFFFFFFFF,
        preferred_lifetime: int = 0xFFFFFFFF,
    ) -> None:
        object.__setattr__(self, "prefix", prefix)
        object.__setattr__(self, "prefix_length", prefix_length)
        object.__setattr__(self, "on_link", on_link)
        object.__setattr__(self, "autonomous", autonomous)
        object.__setattr__(self, "router_address", router_address)
        object.__setattr__(self, "valid_lifetime", valid_lifetime)
        object.__setattr__(self, "preferred_lifetime", preferred_lifetime)


@dataclass(frozen=True)
class Opaque:
    """An option this codec carries without interpreting (metric containers, route
    information, solicited information, target descriptors)."""

    type: int
    data: bytes

    def __init__(self, type: int, data: bytes) -> None:
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "data", data)


@dataclass(frozen=True)
class Dis:
    options: tuple = ()
    flags: int = 0

    def __init__(self, options: tuple = (), flags: int = 0) -> None:
        object.__setattr__(self, "options", options)
        object.__setattr__(self, "flags", flags)


@dataclass(frozen=True)
class Dio:
    instance_id: int
    version: int
    rank: int
    dodag_id: bytes
    dtsn: int = 0
    grounded: bool = True
    mop: int = MOP_STORING_MULTICAST
    preference: int = 0
    configuration: DodagConfiguration | None = None
    prefix: PrefixInformation | None = None
    options: tuple = ()  # other options, kept as they came

    def __init__(
        self,
        instance_id: int,
        version: int,
        rank: int,
        dodag_id: bytes,
        dtsn: int = 0,
        grounded: bool = True,
        mop: int = MOP_STORING_MULTICAST,
        preference: int = 0,
        configuration: DodagConfiguration | None = None,
        prefix: PrefixInformation | None = None,
        options: tuple = (),
    ) -> None:
        object.__setattr__(self, "instance_id", instance_id)
        object.__setattr__(self, "version", version)
        object.__setattr__(self, "rank", rank)
        object.__setattr__(self, "dodag_id", dodag_id)
        object.__setattr__(self, "dtsn", dtsn)
        object.__setattr__(self, "grounded", grounded)
        object.__setattr__(self, "mop", mop)
        object.__setattr__(self, "preference", preference)
        object.__setattr__(self, "configuration", configuration)
        object.__setattr__(self, "prefix", prefix)
        object.__setattr__(self, "options", options)


@dataclass(frozen=True)
class Dao:
    instance_id: int
    sequence: int
    targets: tuple[tuple[Target, Transit], ...] = ()  # each target with its transit
    ack_request: bool = False
    dodag_id: bytes | None = None

    def __init__(
        self,
        instance_id: int,
        sequence: int,
        targets: tuple[tuple[Target, Transit], ...] = (),
        ack_request: bool = False,
        dodag_id: bytes | None = None,
    ) -> None:
        object.__setattr__(self, "instance_id", instance_id)
        object.__setattr__(self, "sequence", sequence)
        object.__setattr__(self, "targets", targets)
        object.__setattr__(self, "ack_request", ack_request)
        object.__setattr__(self, "dodag_id", dodag_id)


@dataclass(frozen=True)
class DaoAck:
    instance_id: int
    sequence: int
    status: int = 0  # 0: accepted; 128 and up: rejected
    dodag_id: bytes | None = None

    def __init__(
        self, instance_id: int, sequence: int, status: int = 0, dodag_id: bytes | None = None
    ) -> None:
        object.__setattr__(self, "instance_id", instance_id)
        object.__setattr__(self, "sequence", sequence)
        object.__setattr__(self, "status", status)
        object.__setattr__(self, "dodag_id", dodag_id)


Message = Dis | Dio | Dao | DaoAck


# ----------------------------------------------------------------------- encoding


# The encoder refuses what decode() would refuse or read back differently, so that
# decode(*encode(m)) == m for every message it encodes.


def _option(kind: int, data: bytes) -> bytes:
    if len(data) > 0xFF:
        raise ValueError(f"RPL option {kind} of {len(data)} bytes is too long")
    return bytes((kind, len(data))) + data


def _address(value: bytes | None, what: str, optional: bool = False) -> bytes:
    if value is None and optional:
        return b""
    if value is None or len(value) != 16:
        raise ValueError(f"{what} must be a 16-byte IPv6 address, got {value!r}")
    return as_bytes(value)


def _bits(value: int, width: int, what: str) -> int:
    if not 0 <= value < 1 << width:
        raise ValueError(f"{what} is a {width}-bit field, got {value}")
    return value


def _encode_config(c: DodagConfiguration) -> bytes:
    if c.min_hop_rank_increase == 0:
        raise ValueError("MinHopRankIncrease must not be 0 (decode() refuses it)")
    pcs = _bits(c.path_control_size, 3, "PCS")  # 6.7.6
    flags = (0x08 if c.authentication else 0) | pcs
    return _option(
        DODAG_CONFIGURATION,
        _CONFIG.pack(
            flags,
            c.dio_interval_doublings,
            c.dio_interval_min,
            c.dio_redundancy,
            c.max_rank_increase,
            c.min_hop_rank_increase,
            c.objective_code_point,
            0,
            c.default_lifetime,
            c.lifetime_unit,
        ),
    )


def _encode_prefix(p: PrefixInformation) -> bytes:
    if not 0 <= p.prefix_length <= 128:
        raise ValueError(f"prefix length must be 0..128, got {p.prefix_length}")
    flags = (0x80 if p.on_link else 0) | (0x40 if p.autonomous else 0)
    flags |= 0x20 if p.router_address else 0
    prefix = _address(p.prefix, "the Prefix Information prefix")  # 6.7.10: 16 bytes
    data = struct.pack(
        "!BBII4s", p.prefix_length, flags, p.valid_lifetime, p.preferred_lifetime, b""
    )
    return _option(PREFIX_INFORMATION, data + prefix)


def _encode_target(t: Target) -> bytes:
    if not 0 <= t.prefix_length <= 128:
        raise ValueError(f"target prefix length must be 0..128, got {t.prefix_length}")
    size = (t.prefix_length + 7) // 8
    # 6.7.7: the option carries the prefix's first `size` bytes; decode() pads it to 16.
    prefix = _address(t.prefix, "a target prefix")
    if any(prefix[size:]):
        raise ValueError(f"target prefix has bytes beyond its /{t.prefix_length} length")
    return _option(TARGET, bytes((t.flags, t.prefix_length)) + prefix[:size])


def _encode_transit(t: Transit) -> bytes:
    data = bytes((0x80 if t.external else 0, t.path_control, t.path_sequence, t.path_lifetime))
    parent = _address(t.parent, "the transit parent", optional=True)  # 6.7.8
    return _option(TRANSIT, data + parent)


def _encode_opaque(o: Opaque, reserved: tuple[int, ...] = (PAD1, PADN)) -> bytes:
    # Pad1 and PadN are padding, which decode() drops; in a DIO, the DODAG
    # Configuration and Prefix Information options have fields of their own.
    if o.type in reserved:
        raise ValueError(f"option type {o.type} cannot be carried as an opaque option")
    return _option(o.type, o.data)


def _encode_dio_opaque(o: Opaque) -> bytes:
    return _encode_opaque(o, (PAD1, PADN, DODAG_CONFIGURATION, PREFIX_INFORMATION))


def encode(message: Message) -> tuple[int, bytes]:
    """(ICMPv6 code, body) of a message."""
    if isinstance(message, Dis):
        return DIS, bytes((message.flags, 0)) + b"".join(map(_encode_opaque, message.options))
    if isinstance(message, Dio):
        mop = _bits(message.mop, 3, "MOP")  # figure 14
        second = (0x80 if message.grounded else 0) | (mop << 3)
        second |= _bits(message.preference, 3, "DODAGPreference")
        body = _DIO.pack(
            message.instance_id,
            message.version,
            message.rank,
            second,
            message.dtsn,
            0,
            0,
            _address(message.dodag_id, "DODAGID"),
        )
        if message.configuration is not None:
            body += _encode_config(message.configuration)
        if message.prefix is not None:
            body += _encode_prefix(message.prefix)
        return DIO, body + b"".join(map(_encode_dio_opaque, message.options))
    if isinstance(message, Dao):
        dodag_id = _address(message.dodag_id, "DODAGID", optional=True)
        flags = (0x80 if message.ack_request else 0) | (0x40 if dodag_id else 0)
        body = _DAO.pack(message.instance_id, flags, 0, message.sequence) + dodag_id
        for target, transit in message.targets:
            body += _encode_target(target) + _encode_transit(transit)
        return DAO, body
    dodag_id = _address(message.dodag_id, "DODAGID", optional=True)
    flags = 0x80 if dodag_id else 0
    body = _DAO_ACK.pack(message.instance_id, flags, message.sequence, message.status)
    return DAO_ACK, body + dodag_id


# ----------------------------------------------------------------------- decoding


def _options(data: bytes) -> list[tuple[int, bytes]]:
    out, i = [], 0
    while i < len(data):
        kind = data[i]
        if kind == PAD1:
            i += 1
            continue
        if i + 2 > len(data):
            raise RplDecodeError("RPL option header runs past the message")
        length = data[i + 1]
        end = i + 2 + length
        if end > len(data):
            raise RplDecodeError(f"RPL option {kind} of {length} bytes runs past the message")
        if kind != PADN:
            out.append((kind, data[i + 2 : end]))
        i = end
    return out


def _config(data: bytes) -> DodagConfiguration:
    if len(data) != _CONFIG.size:
        raise RplDecodeError(f"DODAG Configuration option of {len(data)} bytes, not 14")
    flags, doublings, imin, redundancy, max_inc, min_inc, ocp, _, lifetime, unit = _CONFIG.unpack(
        data
    )
    if min_inc == 0:
        raise RplDecodeError("DODAG Configuration with a MinHopRankIncrease of 0")
    return DodagConfiguration(
        bool(flags & 0x08), flags & 0x07, doublings, imin, redundancy, max_inc, min_inc, ocp,
        lifetime, unit,
    )  # fmt: skip


def _prefix(data: bytes) -> PrefixInformation:
    if len(data) != 30:
        raise RplDecodeError(f"Prefix Information option of {len(data)} bytes, not 30")
    length, flags, valid, preferred, _ = struct.unpack_from("!BBII4s", data)
    if length > 128:
        raise RplDecodeError(f"Prefix Information with a prefix length of {length}")
    return PrefixInformation(
        data[14:30], length, bool(flags & 0x80), bool(flags & 0x40), bool(flags & 0x20),
        valid, preferred,
    )  # fmt: skip


def _target(data: bytes) -> Target:
    if len(data) < 2:
        raise RplDecodeError("RPL Target option shorter than 2 bytes")
    flags, length = data[0], data[1]
    size = (length + 7) // 8
    if length > 128 or len(data) - 2 != size:
        raise RplDecodeError(f"RPL Target of {len(data) - 2} bytes for a /{length} prefix")
    return Target(data[2:].ljust(16, b"\0"), length, flags)


def _transit(data: bytes) -> Transit:
    if len(data) not in (4, 20):
        raise RplDecodeError(f"Transit Information option of {len(data)} bytes, not 4 or 20")
    flags, control, sequence, lifetime = data[:4]
    return Transit(lifetime, sequence, control, bool(flags & 0x80), data[4:] or None)


def decode(code: int, body: bytes) -> Message:
    """The message of an ICMPv6 RPL body; RplDecodeError for anything malformed."""
    body = as_bytes(body)
    if code == DIS:
        if len(body) < 2:
            raise RplDecodeError("DIS shorter than its 2-byte base")
        options = tuple(Opaque(k, v) for k, v in _options(body[2:]))
        return Dis(options, body[0])
    if code == DIO:
        if len(body) < _DIO.size:
            raise RplDecodeError(f"DIO of {len(body)} bytes is shorter than its base")
        instance, version, rank, second, dtsn, _f, _r, dodag_id = _DIO.unpack_from(body)
        configuration = prefix = None
        others = []
        for kind, data in _options(body[_DIO.size :]):
            if kind == DODAG_CONFIGURATION:
                configuration = _config(data)
            elif kind == PREFIX_INFORMATION:
                prefix = _prefix(data)
            else:
                others.append(Opaque(kind, data))
        return Dio(
            instance, version, rank, dodag_id, dtsn, bool(second & 0x80), (second >> 3) & 0x07,
            second & 0x07, configuration, prefix, tuple(others),
        )  # fmt: skip
    if code == DAO:
        if len(body) < _DAO.size:
            raise RplDecodeError(f"DAO of {len(body)} bytes is shorter than its base")
        instance, flags, _, sequence = _DAO.unpack_from(body)
        rest = body[_DAO.size :]
        dodag_id = None
        if flags & 0x40:
            if len(rest) < 16:
                raise RplDecodeError("DAO with the D flag but no DODAGID")
            dodag_id, rest = rest[:16], rest[16:]
        targets: list[tuple[Target, Transit]] = []
        waiting: list[Target] = []
        for kind, data in _options(rest):
            if kind == TARGET:
                waiting.append(_target(data))
            elif kind == TRANSIT:
                # A Transit Information option applies to the targets just before it.
                transit = _transit(data)
                targets.extend((t, transit) for t in waiting)
                waiting = []
        if waiting:
            raise RplDecodeError("DAO target without Transit Information")
        return Dao(instance, sequence, tuple(targets), bool(flags & 0x80), dodag_id)
    if code == DAO_ACK:
        if len(body) < _DAO_ACK.size:
            raise RplDecodeError(f"DAO-ACK of {len(body)} bytes is shorter than its base")
        instance, flags, sequence, status = _DAO_ACK.unpack_from(body)
        dodag_id = None
        if flags & 0x80:
            if len(body) < _DAO_ACK.size + 16:
                raise RplDecodeError("DAO-ACK with the D flag but no DODAGID")
            dodag_id = body[4:20]
        return DaoAck(instance, sequence, status, dodag_id)
    if code >= 0x80:
        raise RplDecodeError(f"secure RPL message (code {code:#x}) is not supported")
    raise RplDecodeError(f"unknown RPL message code {code:#x}")
