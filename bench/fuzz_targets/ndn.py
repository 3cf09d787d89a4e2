"""NDN's stream framing (proto/ndn/framing.py, TlvFramer): streams of TLV elements,
valid packets, other elements, ones near and over the size limit, mutated streams,
fed in random pieces (`ndn-framing`)."""

from __future__ import annotations

import random

from fuzz_targets.codecs import valid_ndn_packet, valid_tlv
from fuzz_targets.common import StackCase, mutate, pieces, randbytes
from iotbench.proto.ndn import tlv
from iotbench.proto.ndn.framing import MAX_PACKET_BYTES, TlvFramer


def _element(rng: random.Random, limit: int) -> bytes:
    r = rng.random()
    if r < 0.55:
        return valid_ndn_packet(rng)
    if r < 0.82:
        return valid_tlv(rng)
    if r < 0.95:  # at the size limit, or just over it
        size = limit - rng.choice((0, 0, 0, -1, 1, 5))
        t = rng.choice((5, 6, 100, 0xFFFF))
        header = len(tlv.encode_tlv(t, bytes(size)))  # the type and length take some of it
        return tlv.encode_tlv(t, randbytes(rng, max(0, min(size - (header - size), 1 << 16))))
    if r < 0.98:  # a non-minimal VAR-NUMBER or a TLV-TYPE of 0
        return rng.choice((b"\x00\x01x", b"\xfd\x00\x05\x01x", b"\x05\xfd\x00\x01x", b"\xff" * 9))
    return randbytes(rng, rng.randrange(1, 20))


def run_ndn_framing_case(case: StackCase, count: int, stats: dict) -> None:
    """One framer; each input is a piece of a stream of elements (maybe mutated). After
    each piece, what it gave and holds must be what one call with all the stream so
    far gives (the pieces do not matter), every element one whole TLV, the bytes held
    under the size limit, and a failed stream must keep failing."""
    rng = case.rng
    limit = rng.choice((MAX_PACKET_BYTES, MAX_PACKET_BYTES, 100, 1 << 16))
    framer = TlvFramer(limit)
    fed = bytearray()
    got: list[bytes] = []
    failed = False
    queue: list[bytes] = []
    for _ in range(count):
        if not queue:
            stream = b"".join(_element(rng, limit) for _ in range(rng.randint(1, 4)))
            if rng.random() < 0.15:
                stream = mutate(stream, rng)
            queue = pieces(rng, stream) or [b""]
        chunk = case.note("piece", queue.pop(0))
        fed += chunk
        packets: list[bytes] = []
        try:
            packets = framer.feed(chunk)
        except tlv.NdnDecodeError:
            failed = True
        else:
            assert not failed, "the framer went on after the stream failed"
            got += packets
        reference = TlvFramer(limit)
        try:
            whole = reference.feed(bytes(fed))
        except tlv.NdnDecodeError:
            assert failed, "the same stream in one piece fails"
        else:
            assert not failed, "the same stream in one piece does not fail"
            assert whole == got, "the pieces changed the elements"
            assert reference.buffered == framer.buffered
            assert sum(map(len, got)) + framer.buffered == len(fed), "bytes lost or made up"
            assert framer.buffered < max(limit, 19), f"{framer.buffered} bytes held"
        for packet in packets:
            t, _, end = tlv.read_tl(packet, 0, len(packet))
            assert end == len(packet) and 0 < t and len(packet) <= limit
        stats["inputs"] += 1


STACKS = {"ndn-framing": run_ndn_framing_case}
