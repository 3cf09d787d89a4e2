"""RFC 8613 Appendix C's test vectors, byte for byte: key derivation (C.1-C.3),
protected requests (C.4-C.6) and responses (C.7, C.8), each intermediate
value, and the same requests and responses made by the layer itself."""

from __future__ import annotations

import random

import pytest
from oscore_harness import SALT, SECRET, h

from iotbench.proto.coap.codec import decode, encode
from iotbench.proto.oscore.context import SecurityContext, hkdf_info, make_nonce
from iotbench.proto.oscore.layer import OscoreLayer
from iotbench.proto.oscore.message import RequestId, aad, external_aad, protect, split
from iotbench.proto.oscore.option import OscoreOption

ID_CONTEXT = h("37cbf3210017a2d3")

# (case, salt, id context, sender id, recipient id,
#  info sender key, info recipient key, info IV,
#  sender key, recipient key, common IV, sender nonce (PIV 0), recipient nonce (PIV 0))
DERIVATION = [
    ("C.1.1", SALT, None, "", "01",
     "8540f60a634b657910", "854101f60a634b657910", "8540f60a6249560d",
     "f0910ed7295e6ad4b54fc793154302ff", "ffb14e093c94c9cac9471648b4f98710",
     "4622d4dd6d944168eefb54987c", "4622d4dd6d944168eefb54987c", "4722d4dd6d944169eefb54987c"),
    ("C.1.2", SALT, None, "01", "",
     "854101f60a634b657910", "8540f60a634b657910", "8540f60a6249560d",
     "ffb14e093c94c9cac9471648b4f98710", "f0910ed7295e6ad4b54fc793154302ff",
     "4622d4dd6d944168eefb54987c", "4722d4dd6d944169eefb54987c", "4622d4dd6d944168eefb54987c"),
    ("C.2.1", b"", None, "00", "01",
     "854100f60a634b657910", "854101f60a634b657910", "8540f60a6249560d",
     "321b26943253c7ffb6003b0b64d74041", "e57b5635815177cd679ab4bcec9d7dda",
     "be35ae297d2dace910c52e99f9", "bf35ae297d2dace910c52e99f9", "bf35ae297d2dace810c52e99f9"),
    ("C.2.2", b"", None, "01", "00",
     "854101f60a634b657910", "854100f60a634b657910", "8540f60a6249560d",
     "e57b5635815177cd679ab4bcec9d7dda", "321b26943253c7ffb6003b0b64d74041",
     "be35ae297d2dace910c52e99f9", "bf35ae297d2dace810c52e99f9", "bf35ae297d2dace910c52e99f9"),
    ("C.3.1", SALT, ID_CONTEXT, "", "01",
     "85404837cbf3210017a2d30a634b657910", "8541014837cbf3210017a2d30a634b657910",
     "85404837cbf3210017a2d30a6249560d",
     "af2a1300a5e95788b356336eeecd2b92", "e39a0c7c77b43f03b4b39ab9a268699f",
     "2ca58fb85ff1b81c0b7181b85e", "2ca58fb85ff1b81c0b7181b85e", "2da58fb85ff1b81d0b7181b85e"),
    ("C.3.2", SALT, ID_CONTEXT, "01", "",
     "8541014837cbf3210017a2d30a634b657910", "85404837cbf3210017a2d30a634b657910",
     "85404837cbf3210017a2d30a6249560d",
     "e39a0c7c77b43f03b4b39ab9a268699f", "af2a1300a5e95788b356336eeecd2b92",
     "2ca58fb85ff1b81c0b7181b85e", "2da58fb85ff1b81d0b7181b85e", "2ca58fb85ff1b81c0b7181b85e"),
]  # fmt: skip


@pytest.mark.parametrize("vector", DERIVATION, ids=[v[0] for v in DERIVATION])
def test_key_derivation(vector):
    _, salt, id_context, sid, rid, info_s, info_r, info_iv, skey, rkey, iv, snonce, rnonce = vector
    sid, rid = h(sid), h(rid)
    assert hkdf_info(sid, id_context, "Key", 16).hex() == info_s
    assert hkdf_info(rid, id_context, "Key", 16).hex() == info_r
    assert hkdf_info(b"", id_context, "IV", 13).hex() == info_iv
    ctx = SecurityContext(SECRET, sid, rid, master_salt=salt, id_context=id_context)
    assert (ctx.sender_key.hex(), ctx.recipient_key.hex(), ctx.common_iv.hex()) == (skey, rkey, iv)
    assert ctx.nonce(sid, b"\0").hex() == snonce
    assert ctx.nonce(rid, b"\0").hex() == rnonce


# (case, salt, id context, sender id, unprotected request, aad_array, AAD, nonce,
#  option value, ciphertext, protected request)
REQUESTS = [
    ("C.4", SALT, None, "", "44015d1f00003974396c6f63616c686f737483747631",
     "8501810a40411440", "8368456e63727970743040488501810a40411440",
     "4622d4dd6d944168eefb549868", "0914",
     "612f1092f1776f1c1668b3825e",
     "44025d1f00003974396c6f63616c686f7374620914ff612f1092f1776f1c1668b3825e"),
    ("C.5", b"", None, "00", "440171c30000b932396c6f63616c686f737483747631",
     "8501810a4100411440", "8368456e63727970743040498501810a4100411440",
     "bf35ae297d2dace910c52e99ed", "091400",
     "4ed339a5a379b0b8bc731fffb0",
     "440271c30000b932396c6f63616c686f737463091400ff4ed339a5a379b0b8bc731fffb0"),
    ("C.6", SALT, ID_CONTEXT, "", "44012f8eef9bbf7a396c6f63616c686f737483747631",
     "8501810a40411440", "8368456e63727970743040488501810a40411440",
     "2ca58fb85ff1b81c0b7181b84a", "19140837cbf3210017a2d3",
     "72cd7273fd331ac45cffbe55c3",
     "44022f8eef9bbf7a396c6f63616c686f73746b19140837cbf3210017a2d3ff72cd7273fd331ac45cffbe55c3"),
]  # fmt: skip


def _client(salt, id_context, sid):
    sid = h(sid)
    rid = b"\x01" if sid != b"\x01" else b""
    return SecurityContext(
        SECRET, sid, rid, master_salt=salt, id_context=id_context, sender_sequence_number=20
    )


@pytest.mark.parametrize("vector", REQUESTS, ids=[v[0] for v in REQUESTS])
def test_protected_request_step_by_step(vector):
    (
        _,
        salt,
        id_context,
        sid,
        unprotected,
        aad_array,
        full_aad,
        nonce,
        option,
        ciphertext,
        protected,
    ) = vector
    ctx = _client(salt, id_context, sid)
    piv = ctx.new_partial_iv()
    assert piv == b"\x14" and ctx.sender_sequence_number == 21
    request = RequestId(ctx.sender_id, piv)
    assert external_aad(request).hex() == aad_array
    assert aad(request).hex() == full_aad
    msg = decode(h(unprotected))
    outer, plaintext = split(msg)
    assert plaintext.hex() == "01b3747631"  # GET, Uri-Path "tv1"
    assert ctx.nonce(ctx.sender_id, piv).hex() == nonce
    assert OscoreOption(piv, ctx.sender_id, id_context).encode().hex() == option
    assert ctx.seal(h(nonce), plaintext, aad(request)).hex() == ciphertext
    out = protect(ctx, msg, request, h(nonce), OscoreOption(piv, ctx.sender_id, id_context))
    assert encode(out).hex() == protected


@pytest.mark.parametrize("vector", REQUESTS, ids=[v[0] for v in REQUESTS])
def test_the_layer_protects_the_request_and_the_server_layer_opens_it(vector):
    _, salt, id_context, sid, unprotected, *_, protected = vector
    client = OscoreLayer(random.Random(1))
    client.add_peer("server", _client(salt, id_context, sid))
    client.outgoing(0.0, h(unprotected), "server")
    assert client.datagrams_to_send() == [(h(protected), "server")]

    server = OscoreLayer(random.Random(2))
    server.add_context(
        SecurityContext(SECRET, b"\x01", h(sid), master_salt=salt, id_context=id_context)
    )
    server.incoming(0.0, h(protected), "client")
    assert server.plaintexts() == [(h(unprotected), "client")]
    assert server.events() == [] and server.datagrams_to_send() == []


UNPROTECTED_RESPONSE = "64455d1f00003974ff48656c6c6f20576f726c6421"
C7 = "64445d1f0000397490ffdbaad1e9a7e7b2a813d3c31524378303cdafae119106"
C8 = "64445d1f00003974920100ff4d4c13669384b67354b2b6175ff4b8658c666a6cf88e"


def _server():
    return SecurityContext(SECRET, b"\x01", b"", master_salt=SALT)


def test_c7_response_reuses_the_request_nonce():
    ctx = _server()
    request = RequestId(b"", b"\x14")
    msg = decode(h(UNPROTECTED_RESPONSE))
    _, plaintext = split(msg)
    assert plaintext.hex() == "45ff48656c6c6f20576f726c6421"
    nonce = ctx.nonce(request.kid, request.piv)
    assert nonce.hex() == "4622d4dd6d944168eefb549868"
    assert aad(request).hex() == "8368456e63727970743040488501810a40411440"
    assert ctx.seal(nonce, plaintext, aad(request)).hex() == (
        "dbaad1e9a7e7b2a813d3c31524378303cdafae119106"
    )
    assert encode(protect(ctx, msg, request, nonce, OscoreOption())).hex() == C7


def test_c8_response_with_its_own_partial_iv():
    ctx = _server()
    request = RequestId(b"", b"\x14")
    piv = ctx.new_partial_iv()
    assert piv == b"\x00"
    nonce = ctx.nonce(ctx.sender_id, piv)
    assert nonce.hex() == "4722d4dd6d944169eefb54987c"
    assert OscoreOption(piv).encode().hex() == "0100"
    msg = decode(h(UNPROTECTED_RESPONSE))
    assert encode(protect(ctx, msg, request, nonce, OscoreOption(piv))).hex() == C8


def test_c4_then_c7_through_both_layers():
    """The server layer opens C.4 and protects the endpoint's answer as C.7; the
    client layer that sent C.4 opens C.7 (and, from the same request, C.8)."""
    server = OscoreLayer(random.Random(2))
    server.add_context(_server())
    server.incoming(0.0, h(REQUESTS[0][-1]), "client")
    server.plaintexts()
    server.outgoing(0.0, h(UNPROTECTED_RESPONSE), "client")
    assert server.datagrams_to_send() == [(h(C7), "client")]

    for response in (C7, C8):
        client = OscoreLayer(random.Random(1))
        client.add_peer("server", _client(SALT, None, ""))
        client.outgoing(0.0, h(REQUESTS[0][4]), "server")
        client.datagrams_to_send()
        client.incoming(0.0, h(response), "server")
        assert client.plaintexts() == [(h(UNPROTECTED_RESPONSE), "server")]
        assert client.events() == []


def test_nonce_of_rfc_section_5_4_example():
    # 5.4's AAD example: request_kid 0x00, request_piv 0x25.
    request = RequestId(b"\x00", b"\x25")
    assert external_aad(request).hex() == "8501810a4100412540"
    assert aad(request).hex() == "8368456e63727970743040498501810a4100412540"
    assert make_nonce(bytes(13), b"", b"\x00") == bytes(13)
