"""A DTLS connection's handshake states: an enum, and one place where they change."""

from __future__ import annotations

import random

import pytest

from iotbench.proto.dtls.connection import DtlsConnection, State
from iotbench.proto.dtls.params import DtlsParams, PskClientCredentials


def client() -> DtlsConnection:
    creds = PskClientCredentials(b"dev1", b"secret")
    return DtlsConnection.client(0.0, ("fd00::1", 5684), random.Random(1), DtlsParams(), creds)


def test_a_client_starts_waiting_for_the_server_hello_and_may_only_move_on():
    conn = client()
    assert conn.state is State.WAIT_HELLO and f"{conn.state}" == "wait-server-hello"
    with pytest.raises(RuntimeError, match="cannot go from 'wait-server-hello'"):
        conn._enter(State.ESTABLISHED)  # skipping the server's flight is a bug of ours
    conn._enter(State.WAIT_HELLO_DONE)
    conn._enter(State.FAILED)  # failing is possible from anywhere
    assert conn.finished


def test_every_state_but_the_ends_leads_somewhere_and_the_ends_lead_nowhere():
    from iotbench.proto.dtls.connection import _NEXT

    assert set(_NEXT) == set(State)
    ends = {State.ESTABLISHED, State.CLOSED, State.FAILED}
    assert all(_NEXT[s] for s in State if s not in ends)
    assert not any(_NEXT[s] for s in ends)
