"""6LoWPAN (RFC 4944, RFC 6282): IPv6 over 802.15.4 frames, sans I/O.

`dispatch.py` tells what a frame payload carries from its first byte,
`codec.py` compresses and decompresses IPv6/UDP headers (uncompressed 0x41
or LOWPAN_IPHC with UDP NHC), and `fragments.py` splits a compressed packet
into link fragments and reassembles them.
"""

from iotbench.net.lowpan.codec import (
    Compressed,
    LowpanDecodeError,
    compress,
    decompress,
    interface_identifier,
)
from iotbench.net.lowpan.dispatch import (
    Dispatch,
    classify,
    is_fragment,
    is_lowpan,
    is_lowpan_ipv6,
)
from iotbench.net.lowpan.fragments import Reassembler, fragment

__all__ = [
    "Compressed",
    "Dispatch",
    "LowpanDecodeError",
    "Reassembler",
    "classify",
    "compress",
    "decompress",
    "fragment",
    "interface_identifier",
    "is_fragment",
    "is_lowpan",
    "is_lowpan_ipv6",
]
