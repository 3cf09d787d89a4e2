"""Named Data Networking: packet format v0.3, NDNLPv2, signatures, forwarder parts, S5 app API.

Modules, one job each:

- tlv, types: TLV primitives and assigned numbers;
- name, interest, data, siginfo, lp, packet: the packets, kept in wire format;
- signing: DigestSha256, HMAC-SHA256, ECDSA-SHA256 (RFC 6979), AES-CCM;
- fib, pit, cs, dead_nonce, strategy, forwarder: the forwarder;
- fragmentation: S5's 3-byte-header hop-by-hop fragmentation;
- app: S5's application API; profiles: device CPU costs and RAM budgets.
"""

from .app import NdnApp
from .cs import ContentStore
from .data import Data, MetaInfo, make_data
from .fib import Fib
from .forwarder import Face, Forwarder, ForwarderConfig, ForwarderCounters
from .fragmentation import FragmentError, Reassembler, fragment
from .interest import Interest, make_interest
from .lp import LpPacket
from .name import Component, Name
from .packet import decode_packet
from .pit import Pit
from .profiles import PROFILES, DeviceProfile, get_profile
from .siginfo import KeyLocator, SignatureInfo
from .signing import (
    DigestSha256Signer,
    DigestSha256Verifier,
    EcdsaSha256Signer,
    EcdsaSha256Verifier,
    HmacSha256Signer,
    HmacSha256Verifier,
    verify,
)
from .strategy import BestRoute, Multicast, Strategy
from .tlv import NdnDecodeError
from .types import ComponentType, ContentType, NackReason, SignatureType

__all__ = [
    "PROFILES",
    "BestRoute",
    "Component",
    "ComponentType",
    "ContentStore",
    "ContentType",
    "Data",
    "DeviceProfile",
    "DigestSha256Signer",
    "DigestSha256Verifier",
    "EcdsaSha256Signer",
    "EcdsaSha256Verifier",
    "Face",
    "Fib",
    "Forwarder",
    "ForwarderConfig",
    "ForwarderCounters",
    "FragmentError",
    "HmacSha256Signer",
    "HmacSha256Verifier",
    "Interest",
    "KeyLocator",
    "LpPacket",
    "MetaInfo",
    "Multicast",
    "NackReason",
    "Name",
    "NdnApp",
    "NdnDecodeError",
    "Pit",
    "Reassembler",
    "SignatureInfo",
    "SignatureType",
    "Strategy",
    "decode_packet",
    "fragment",
    "get_profile",
    "make_data",
    "make_interest",
    "verify",
]
