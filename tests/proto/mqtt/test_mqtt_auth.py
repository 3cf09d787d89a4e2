"""The password file (mosquitto's format, plain and $6$/$7$ hashed) and the CONNECT decision."""

from __future__ import annotations

import pytest

from iotbench.proto.mqtt.auth import Passwords, refusal
from iotbench.proto.mqtt.codec import ConnectReturnCode
from iotbench.proto.mqtt.conffile import ConfigFileError

# Written by mosquitto_passwd 2.0.11 (-b FILE alice secret; -H sha512 -b FILE carol pw6).
ALICE_7 = (
    "alice:$7$101$N7X7tXwwZTe0E/vf$b7NRPkCkmA7zvhj9hlSzn6tUaKdkUmjMKLWLVvrhj662GyetmeaWq9XxD"
    "/eC3A/91PVou/nXvRmuVyvNoF/aVA=="
)
CAROL_6 = (
    "carol:$6$aL6R1znLpBW1LrqB$4HPj151iRnp5AY5JFK3gVvIiDuCYaznuQIJhdKB4HGGdhVNEjsn5dPLTF3bfFUVA"
    "7nVTL6Pjrzj5RXn7lYebqg=="
)


def test_hashes_written_by_mosquitto_passwd():
    pw = Passwords.parse(f"{ALICE_7}\n{CAROL_6}\n")
    assert len(pw) == 2 and "alice" in pw and "carol" in pw
    assert pw.check("alice", b"secret")
    assert not pw.check("alice", b"Secret")
    assert not pw.check("alice", None)
    assert pw.check("carol", b"pw6")
    assert not pw.check("carol", b"secret")
    assert not pw.check("dave", b"secret")


def test_plain_text_file_with_comments_blanks_and_colons():
    text = (
        "# the lab's users\n"
        "\n"
        "bob:hunter2\n"
        "  eve :  pass:with:colons  \r\n"  # blanks trimmed, the password is all after ':'
        "   \n"
    )
    pw = Passwords.parse(text)
    assert len(pw) == 2
    assert pw.check("bob", b"hunter2")
    assert pw.check("eve", b"pass:with:colons")
    assert not pw.check("eve", b"pass")


def test_plain_and_hashed_entries_mix():
    pw = Passwords.parse(f"bob:hunter2\n{ALICE_7}\n".encode())  # bytes are read as UTF-8
    assert pw.check("bob", b"hunter2") and pw.check("alice", b"secret")


def test_a_mapping_is_a_table_of_plain_passwords():
    pw = Passwords({"u": b"p"})
    assert pw.check("u", b"p") and not pw.check("u", b"q")


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("alice\n", 1, "no ':' between user name and password"),
        ("# c\n:secret\n", 2, "empty user name"),
        ("bob:\n", 1, "no password for 'bob'"),
        ("bob:x\nbob:y\n", 2, "user 'bob' again (first on line 1)"),
        ("bob:$5$abc$def\n", 1, "unknown password hash $5$ (mosquitto writes $6$ and $7$)"),
        ("bob:$7$101$abc\n", 1, "a $7$ password hash is $7$ITERATIONS$SALT$HASH"),
        ("bob:$6$a$b$c\n", 1, "a $6$ password hash is $6$SALT$HASH"),
        ("bob:$7$x1$a$b\n", 1, "$7$ iterations 'x1' is not a number"),
        ("bob:$7$0$a$b\n", 1, "$7$ iterations 0 out of range"),
        ("bob:$6$!!!!$b\n", 1, "the salt is not base64"),
        ("bob:$6$AAAA$b\n", 1, "the salt is 3 bytes, not 12"),
        ("bob:$6$AAAAAAAAAAAAAAAA$AAAA\n", 1, "the hash is 3 bytes, not 64"),
        ("bob:a\x00b\n", 1, "a NUL character (U+0000)"),
    ],
)
def test_malformed_lines_name_the_line_and_the_problem(text, line, problem):
    with pytest.raises(ConfigFileError) as info:
        Passwords.parse(text, "users.txt")
    assert (info.value.source, info.value.line, info.value.problem) == ("users.txt", line, problem)
    assert str(info.value) == f"users.txt, line {line}: {problem}"


def test_bytes_that_are_not_utf8_name_their_line():
    with pytest.raises(ConfigFileError, match=r"^pw, line 2: not UTF-8 text$"):
        Passwords.parse(b"a:b\nc:\xff\n", "pw")


# ---- who may connect ----------------------------------------------------------------


def test_refusal_codes():
    pw = Passwords({"alice": b"secret"})
    bad = ConnectReturnCode.BAD_USERNAME_OR_PASSWORD
    denied = ConnectReturnCode.NOT_AUTHORIZED
    assert refusal(pw, False, "alice", b"secret") is None
    assert refusal(pw, False, "alice", b"wrong") == bad
    assert refusal(pw, False, "alice", None) == bad
    assert refusal(pw, False, "mallory", b"secret") == bad
    assert refusal(pw, False, None, None) == denied
    # anonymous clients allowed: given credentials are still checked (mosquitto too)
    assert refusal(pw, True, None, None) is None
    assert refusal(pw, True, "alice", b"wrong") == bad
    # no password table: any user name is taken as given
    assert refusal(None, True, "anyone", b"x") is None
    assert refusal(None, False, None, None) == denied
