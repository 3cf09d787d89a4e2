"""The targets of bench/fuzz.py: codecs.py (one per codec), stacks.py and the
modules beside it (one per sans-I/O stack); common.py holds what they share."""

from __future__ import annotations

from collections.abc import Callable

from fuzz_targets import codecs, drivers, em, http, http_clients, ndn, quic, rpl, stacks, tcp
from fuzz_targets.common import Codec, StackCase

CODECS: list[Codec] = [*codecs.CODECS, *tcp.CODECS]
STACKS: dict[str, Callable[[StackCase, int, dict], None]] = {
    **stacks.STACKS,
    **tcp.STACKS,
    **http.STACKS,
    **http_clients.STACKS,
    **quic.STACKS,
    **em.STACKS,
    **rpl.STACKS,
    **ndn.STACKS,
    **drivers.STACKS,
}
