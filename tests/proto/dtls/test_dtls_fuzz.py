"""Malformed and mutated datagrams never make a DTLS layer raise or grow without bound."""

from __future__ import annotations

from dtls_harness import C, Link, S, pair
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mutations import inputs

# Every datagram of a handshake (both directions), then one of application data.
_LINK = Link(*pair())
_LINK.client.outgoing(0.0, b"GET", S)
_LINK.run()
CORPUS = _LINK.sent["c2s"] + _LINK.sent["s2c"]

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


def datagrams() -> st.SearchStrategy[bytes]:
    """Random bytes, the corpus's datagrams, and those mutated."""
    return inputs(st.sampled_from(CORPUS), max_random=120)


@FUZZ
@given(st.lists(st.tuples(datagrams(), st.integers(0, 3)), max_size=30))
def test_layers_take_any_datagrams(inputs):
    client, server = pair()
    client.outgoing(0.0, b"x", S)
    now = 0.0
    for data, source in inputs:
        now += 0.4
        server.incoming(now, data, (C, source))
        client.incoming(now, data, S)
        for layer in (client, server):
            t = layer.next_timer()
            if t is not None and t <= now:
                layer.handle_timer(now)
            layer.datagrams_to_send()
            layer.plaintexts()
            layer.events()
    assert len(server._sessions) <= server.params.max_sessions
    assert len(server._handshakes) <= server.params.max_handshakes
    assert len(server._hello_parts) <= 16
