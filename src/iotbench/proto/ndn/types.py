"""Assigned numbers of NDN packet format v0.3 and NDNLPv2.

TLV-TYPE numbers come from the packet specification's "TLV-TYPE number
assignments" table, name component types from the Name Component Type
registry (naming conventions rev. 3), and the link-layer numbers from the
NDNLPv2 wiki. Each is written once here and imported everywhere else.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["TT", "ComponentType", "ContentType", "LpType", "NackReason", "SignatureType"]


class TT(IntEnum):
    """TLV-TYPE numbers of the network layer (packet format v0.3)."""

    INTEREST = 0x05
    DATA = 0x06
    NAME = 0x07
    # Interest
    CAN_BE_PREFIX = 0x21
    MUST_BE_FRESH = 0x12
    FORWARDING_HINT = 0x1E
    NONCE = 0x0A
    INTEREST_LIFETIME = 0x0C
    HOP_LIMIT = 0x22
    APPLICATION_PARAMETERS = 0x24
    INTEREST_SIGNATURE_INFO = 0x2C
    INTEREST_SIGNATURE_VALUE = 0x2E
    # Data
    META_INFO = 0x14
    CONTENT = 0x15
    SIGNATURE_INFO = 0x16
    SIGNATURE_VALUE = 0x17
    CONTENT_TYPE = 0x18
    FRESHNESS_PERIOD = 0x19
    FINAL_BLOCK_ID = 0x1A
    # signatures
    SIGNATURE_TYPE = 0x1B
    KEY_LOCATOR = 0x1C
    KEY_DIGEST = 0x1D
    SIGNATURE_NONCE = 0x26
    SIGNATURE_TIME = 0x28
    SIGNATURE_SEQ_NUM = 0x2A
    VALIDITY_PERIOD = 0xFD


class ComponentType(IntEnum):
    """Name component TLV-TYPEs (1..65535)."""

    IMPLICIT_SHA256_DIGEST = 0x01
    PARAMETERS_SHA256_DIGEST = 0x02
    GENERIC = 0x08
    KEYWORD = 0x20
    SEGMENT = 0x32
    BYTE_OFFSET = 0x34
    VERSION = 0x36
    TIMESTAMP = 0x38
    SEQUENCE_NUM = 0x3A


class ContentType(IntEnum):
    BLOB = 0
    LINK = 1
    KEY = 2
    NACK = 3
    PREFIX_ANN = 5


class SignatureType(IntEnum):
    DIGEST_SHA256 = 0
    SHA256_WITH_RSA = 1
    SHA256_WITH_ECDSA = 3
    HMAC_WITH_SHA256 = 4
    ED25519 = 5


class LpType(IntEnum):
    """NDNLPv2 TLV-TYPE numbers."""

    LP_PACKET = 0x64
    FRAGMENT = 0x50
    SEQUENCE = 0x51
    FRAG_INDEX = 0x52
    FRAG_COUNT = 0x53
    PIT_TOKEN = 0x62
    NACK = 0x0320
    NACK_REASON = 0x0321
    INCOMING_FACE_ID = 0x032C
    NEXT_HOP_FACE_ID = 0x0330
    CACHE_POLICY = 0x0334
    CONGESTION_MARK = 0x0340
    ACK = 0x0344
    TX_SEQUENCE = 0x0348
    NON_DISCOVERY = 0x034C
    PREFIX_ANNOUNCEMENT = 0x0350


class NackReason(IntEnum):
    """NDNLPv2 NackReason values; a Nack without NackReason means NONE."""

    NONE = 0
    CONGESTION = 50
    DUPLICATE = 100
    NO_ROUTE = 150
