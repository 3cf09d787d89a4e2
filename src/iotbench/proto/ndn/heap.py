"""A forwarder's tables in a fixed heap, as CCN-lite allocates them on RIOT (S4).

CCN-lite at the commit S4 ran (cgundogan/ccn-lite b036cce) counts no PIT
entries: `CCNL_DEFAULT_MAX_PIT_ENTRIES` (20 on RIOT, ccnl-defs.h) is
assigned to `max_pit_entries` (ccn-lite-riot.c, `ccnl_start`) and never
compared, and `ccnl_interest_new` (ccnl-relay.c) creates an entry unless
`ccnl_calloc` fails. Its tables live in the heap the application gives it:
the study's NDN apps link RIOT's `tlsf` package, whose malloc serves a static
pool, `TLSF_BUFFER` in each app's main.c (40 kB for ndn_vanilla and
ndn_hopp, 45 kB for ndn_ipush). A full heap drops a new Interest (no PIT
entry), and a Data that cannot be allocated is dropped before it satisfies
anything (ccnl-fwd.c, `ccnl_fwd_handleContent`: `ccnl_content_new` fails).

`Heap` is that pool; the functions below price each table entry as CCN-lite
allocates it on the M3 (ARM, 32-bit), rounded as TLSF 3 rounds a block (a
4-byte header, 4-byte alignment, 12-byte minimum). The structure sizes were
read from the study's apps built for the M3 (pahole on the library's
objects: ccnl_interest_s 52, ccnl_pendint_s 12, ccnl_pkt_s 80, ccnl_buf_s 12,
ccnl_prefix_s 32, ccnl_content_s 32, ccnl_face_s 68, ccnl_forward_s 20), and a RIOT `native`
build filling a pool with the study's Interests held exactly the number of
entries these prices give (docs/studies/s4.md, "The PIT").

Left out: allocations that live a moment (a name printed to text, a
forwarded Interest's copy, a message in CCN-lite's queue), and fragmentation
of the pool, which can cost one or two entries more.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "TLSF_OVERHEAD_BYTES",
    "Heap",
    "block_bytes",
    "content_bytes",
    "face_bytes",
    "fib_entry_bytes",
    "pending_face_bytes",
    "pit_entry_bytes",
]

#: TLSF's control structure (3,188 bytes, kept inside the pool by
#: tlsf_create_with_pool) and its pool header (8).
TLSF_OVERHEAD_BYTES: Final = 3188 + 8
_NAME_SLOTS: Final = 8  # CCNL_MAX_NAME_COMP on RIOT: the parser's component arrays
_PKT: Final = 80  # ccnl_pkt_s (the library is built with USE_HMAC256)
_PREFIX: Final = 32
_BUF: Final = 12  # ccnl_buf_s, allocated with its data appended (ccnl_buf_new)
_INTEREST: Final = 52
_PENDINT: Final = 12
_CONTENT: Final = 32
_FACE: Final = 68
_FORWARD: Final = 20
_NONCE: Final = 4


def block_bytes(size: int) -> int:
    """Pool bytes one allocation of `size` bytes takes in TLSF 3 (32-bit)."""
    return max((size + 3) & ~3, 12) + 4


def _parsed_packet_bytes(wire_bytes: int) -> int:
    """A packet as ccnl_ndntlv_bytes2pkt keeps it: the packet, its prefix with the
    component arrays of CCNL_MAX_NAME_COMP slots, and a buffer with the wire bytes."""
    slots = block_bytes(4 * _NAME_SLOTS)
    return block_bytes(_PKT) + block_bytes(_PREFIX) + 2 * slots + block_bytes(_BUF + wire_bytes)


def pit_entry_bytes(interest_wire_bytes: int) -> int:
    """A new PIT entry for an Interest of this size, with its first downstream face
    (the parsed packet and its nonce buffer are kept with the entry): 360 bytes for
    S4's 57-byte Interests."""
    return (
        _parsed_packet_bytes(interest_wire_bytes)
        + block_bytes(_BUF + _NONCE)
        + block_bytes(_INTEREST)
        + pending_face_bytes()
    )


def pending_face_bytes() -> int:
    """One more downstream face on a PIT entry (ccnl_interest_append_pending)."""
    return block_bytes(_PENDINT)


def content_bytes(data_wire_bytes: int) -> int:
    """A Data held by CCN-lite (ccnl_content_new: the content and its parsed packet):
    336 bytes for S4's 90-byte Data."""
    return block_bytes(_CONTENT) + _parsed_packet_bytes(data_wire_bytes)


def face_bytes() -> int:
    """A face (ccnl_get_face_or_create)."""
    return block_bytes(_FACE)


def fib_entry_bytes(components: int, component_bytes: int) -> int:
    """A FIB entry (ccnl_fib_add_entry: the entry and a copy of the prefix, whose
    arrays and bytes are allocated to size): 108 bytes for /i3."""
    return (
        block_bytes(_FORWARD)
        + block_bytes(_PREFIX)
        + 2 * block_bytes(4 * components)
        + block_bytes(component_bytes)
    )


class Heap:
    """A pool of `pool_bytes` (what the application gives TLSF) that table entries
    take bytes from and give back; `take` fails, as malloc does, when they do not fit."""

    __slots__ = ("failures", "free", "peak_used", "size")

    def __init__(self, pool_bytes: int) -> None:
        if pool_bytes <= TLSF_OVERHEAD_BYTES:
            raise ValueError(
                f"a heap needs more than TLSF's {TLSF_OVERHEAD_BYTES} bytes, got {pool_bytes}"
            )
        self.size = pool_bytes - TLSF_OVERHEAD_BYTES
        self.free = self.size
        self.peak_used = 0
        self.failures = 0  # allocations refused

    def take(self, size: int) -> bool:
        if size > self.free:
            self.failures += 1
            return False
        self.free -= size
        used = self.size - self.free
        if used > self.peak_used:
            self.peak_used = used
        return True

    def give(self, size: int) -> None:
        self.free += size
