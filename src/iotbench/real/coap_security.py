"""Real mode's CoAP security from the command line: DTLS with a pre-shared key.

    iotbench serve coap --psk-identity ID --psk-key KEY          coaps on port 5684
    iotbench client coap GET coaps://HOST/voltage --psk-identity ID --psk-key KEY

The identity and key are text (UTF-8), as libcoap's coap-client -u/-k and
coap-server -k take them, so the same words work with both. A server's
--dtls-max-sessions and --dtls-max-handshakes bound its established sessions
and its handshakes in progress apart (proto/dtls/layer.py says why). Each
call below returns the factory real/coap.py hands the endpoint's random
source to.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from iotbench.proto.dtls.layer import DtlsLayer
from iotbench.proto.dtls.params import DtlsParams, PskClientCredentials, PskServerCredentials
from iotbench.scenarios import UserError

COAPS_PORT = 5684  # RFC 7252 12.7


def psk_pair(identity: str | None, key: str | None) -> tuple[bytes, bytes] | None:
    """The two options as bytes, both or neither (a clear error for one alone)."""
    if identity is None and key is None:
        return None
    if identity is None or key is None:
        raise UserError("--psk-identity and --psk-key go together (DTLS with a pre-shared key)")
    pair = identity.encode("utf-8"), key.encode("utf-8")
    if not 0 < len(pair[0]) < 1 << 16:
        raise UserError("--psk-identity: 1 to 65535 bytes (RFC 4279 5.3)")
    if not 0 < len(pair[1]) <= 64:
        raise UserError("--psk-key: 1 to 64 bytes (RFC 4279 5.3)")
    return pair


def dtls_client(identity: bytes, key: bytes) -> Callable[[random.Random], DtlsLayer]:
    credentials = PskClientCredentials(identity, key)
    return lambda rng: DtlsLayer(rng, client=credentials)


def server_params(max_sessions: int | None, max_handshakes: int | None) -> DtlsParams:
    """DtlsParams with a server's two limits, each left at its default when None."""
    defaults = DtlsParams()
    return DtlsParams(
        max_sessions=defaults.max_sessions if max_sessions is None else max_sessions,
        max_handshakes=defaults.max_handshakes if max_handshakes is None else max_handshakes,
    )


def dtls_server(
    identity: bytes, key: bytes, params: DtlsParams | None = None
) -> Callable[[random.Random], DtlsLayer]:
    credentials = PskServerCredentials({identity: key})
    return lambda rng: DtlsLayer(rng, params, server=credentials)


def dtls_em_server(
    identity: bytes, key: bytes, params: DtlsParams | None = None
) -> Callable[[random.Random, Callable[[object], bool]], DtlsLayer]:
    """The Entity Manager's layer: DTLS for its clients, its members asked in the clear."""
    credentials = PskServerCredentials({identity: key})
    return lambda rng, is_member: DtlsLayer(rng, params, server=credentials, clear_to=is_member)
