"""Property: any password or ACL file, however malformed, either parses or raises
ConfigFileError naming one of its lines; and what parses can be used without errors."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from iotbench.proto.mqtt.acl import Acl
from iotbench.proto.mqtt.auth import Passwords
from iotbench.proto.mqtt.conffile import ConfigFileError

# Pieces of real lines, so that generated files get past the first checks often.
WORDS = [
    "topic", "pattern", "user", "read", "write", "readwrite", "deny", "#", "+", "a/b",
    "a/#", "+/x", "$SYS/#", "%c", "%u", "a/%c/#", "alice", ":", "$6$", "$7$", "$7$101$",
    "AAAAAAAAAAAAAAAA", "$", "=", "101", "x" * 20, "é", "\x00", "\ud800",
]  # fmt: skip
SEPARATORS = [" ", "  ", "\t", "", ":", "$", "\r", "\v"]


FILTERS = st.sampled_from(["a/b", "a/#", "+/x", "#", "$SYS/#", "a/%c/#", "%u/+", "x y"])
GOOD_LINES = st.one_of(
    st.tuples(
        st.sampled_from(["topic", "pattern"]),
        st.sampled_from(["", "read ", "write ", "readwrite ", "deny "]),
        FILTERS,
    ).map(lambda t: f"{t[0]} {t[1]}{t[2]}"),
    st.sampled_from(["user alice", "user bob", "# comment", ""]),
    st.sampled_from(["alice", "bob"]).map(lambda name: f"{name}:pw"),
)


@st.composite
def config_text(draw) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        if draw(st.booleans()):
            lines.append(draw(GOOD_LINES))
            continue
        parts = draw(st.lists(st.sampled_from(WORDS) | st.text(max_size=4), max_size=5))
        seps = draw(st.lists(st.sampled_from(SEPARATORS), min_size=len(parts), max_size=len(parts)))
        lines.append("".join(p + s for p, s in zip(parts, seps, strict=True)))
    return "\n".join(lines)


FILES = config_text() | st.text() | st.binary()
NAMES = st.none() | st.sampled_from(["alice", "", "a+b", "#", "c/d", "%c"]) | st.text(max_size=6)
TOPICS = st.sampled_from(["a/b", "$SYS/x", "a", "/", "x/y/z"]) | st.text(min_size=1, max_size=6)


def _lines(data: str | bytes) -> int:
    return data.count(b"\n" if isinstance(data, bytes) else "\n") + 1


@given(FILES, st.text(max_size=6), st.binary(max_size=8))
def test_password_files_parse_or_raise_the_typed_error(data, user, password):
    try:
        passwords = Passwords.parse(data, "pw")
    except ConfigFileError as exc:
        assert exc.source == "pw" and 1 <= exc.line <= _lines(data)
        assert str(exc).startswith(f"pw, line {exc.line}: ")
        return
    assert passwords.check(user, password) in (True, False)


@given(FILES, st.text(min_size=1, max_size=6), NAMES, TOPICS)
def test_acl_files_parse_or_raise_the_typed_error(data, client_id, username, topic):
    try:
        acl = Acl.parse(data, "acl")
    except ConfigFileError as exc:
        assert exc.source == "acl" and 1 <= exc.line <= _lines(data)
        assert str(exc).startswith(f"acl, line {exc.line}: ")
        return
    client = acl.for_client(client_id, username)
    if "+" not in topic and "#" not in topic:
        assert client.may_read(topic) in (True, False)
        assert client.may_write(topic) in (True, False)
    assert client.may_subscribe("a/#") in (True, False)
