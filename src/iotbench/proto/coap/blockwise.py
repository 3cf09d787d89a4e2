"""RFC 7959 block-wise transfers: what a server keeps between blocks.

The endpoint (endpoint.py) does the message side: it slices responses into
Block2 blocks and follows a peer's blocks as a client. What has to outlive
one message is here:

- `Uploads`: request bodies arriving in Block1 blocks (2.5), assembled per
  (peer, method, URI) until the last block, then handed to the handler whole.
- `Representations`: the body a Block2 transfer is cut from (2.4), kept per
  (peer, URI) from its first block, so that every block of one transfer
  comes from the same representation even when the resource changes
  meanwhile (a sensor reading, a notification), without an ETag round.

Both are bounded in entries and in age, so that a peer that starts transfers
and never finishes them cannot make a server grow.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Final

from .codec import BlockOption, Message
from .options import Opt

#: SZX 7 is reserved in CoAP over UDP (RFC 7959 2.2): 16 .. 1024 bytes.
MAX_SZX: Final = 6
#: At most this many transfers in progress per endpoint, of each kind.
MAX_TRANSFERS = 64


def szx_of(size: int) -> int:
    """16 -> 0 ... 1024 -> 6; ValueError for anything else."""
    return BlockOption.from_size(0, False, size).szx


def block_of(body: bytes, num: int, szx: int) -> tuple[bytes, bool] | None:
    """Block `num` of `body` at size 2**(szx+4) and whether more follow; None past the end."""
    size = 1 << (szx + 4)
    start = num * size
    if start >= len(body) and not (start == 0 and not body):
        return None
    end = start + size
    return body[start:end], end < len(body)


def uri_key(msg: Message) -> tuple:
    """What identifies the resource of a request across its blocks (RFC 7959 2.4: the
    same options as the first request, but the block options and Observe)."""
    return (
        msg.code,
        tuple(msg.get_options(Opt.URI_PATH)),
        tuple(msg.get_options(Opt.URI_QUERY)),
        msg.get_option(Opt.ACCEPT),
    )


@dataclass
class _Upload:
    body: bytearray
    expires_s: float


class Uploads:
    """Request bodies being assembled from Block1 blocks (RFC 7959 2.5)."""

    def __init__(self, lifetime_s: float, max_body_bytes: int) -> None:
        self.lifetime_s = lifetime_s
        self.max_body_bytes = max_body_bytes
        self._open: OrderedDict[Hashable, _Upload] = OrderedDict()

    def add(self, now: float, key: Hashable, block: BlockOption, payload: bytes) -> str | bytes:
        """Take one block. Returns the whole body after the last block, or one of
        "continue" (more to come), "incomplete" (a block is missing: 4.08) and
        "too-large" (past max_body_bytes: 4.13)."""
        self._expire(now)
        upload = self._open.get(key)
        if block.num == 0 or upload is None:
            if block.num != 0:
                return "incomplete"
            upload = _Upload(bytearray(), 0.0)
            self._open[key] = upload
            while len(self._open) > MAX_TRANSFERS:
                self._open.popitem(last=False)
        if block.offset != len(upload.body):
            del self._open[key]
            return "incomplete"
        if len(upload.body) + len(payload) > self.max_body_bytes:
            del self._open[key]
            return "too-large"
        upload.body += payload
        upload.expires_s = now + self.lifetime_s
        self._open.move_to_end(key)
        if block.more:
            return "continue"
        del self._open[key]
        return bytes(upload.body)

    def _expire(self, now: float) -> None:
        while self._open:
            key, upload = next(iter(self._open.items()))
            if upload.expires_s > now:
                return
            del self._open[key]

    def __len__(self) -> int:
        return len(self._open)


class Representations:
    """Response bodies that Block2 transfers in progress are cut from (RFC 7959 2.4)."""

    def __init__(self, lifetime_s: float) -> None:
        self.lifetime_s = lifetime_s
        self._kept: OrderedDict[Hashable, tuple[Message, float]] = OrderedDict()

    def keep(self, now: float, key: Hashable, response: Message) -> None:
        self._expire(now)
        self._kept[key] = (response, now + self.lifetime_s)
        self._kept.move_to_end(key)
        while len(self._kept) > MAX_TRANSFERS:
            self._kept.popitem(last=False)

    def get(self, now: float, key: Hashable) -> Message | None:
        self._expire(now)
        entry = self._kept.get(key)
        return None if entry is None else entry[0]

    def drop(self, key: Hashable) -> None:
        self._kept.pop(key, None)

    def _expire(self, now: float) -> None:
        while self._kept:
            key, (_, expires) = next(iter(self._kept.items()))
            if expires > now:
                return
            del self._kept[key]

    def __len__(self) -> int:
        return len(self._kept)
