"""The ACL file (mosquitto's acl_file format) and what it lets each client do."""

from __future__ import annotations

import pytest

from iotbench.proto.mqtt.acl import READ, WRITE, Acl, AclEntry
from iotbench.proto.mqtt.conffile import ConfigFileError

# mosquitto's own aclfile.example (2.0.11), unchanged.
MOSQUITTO_EXAMPLE = """\
# This affects access control for clients with no username.
topic read $SYS/#

# This only affects clients with username "roger".
user roger
topic foo/bar

# This affects all clients.
pattern write $SYS/broker/connection/%c/state
"""

# The examples of mosquitto.conf(5), acl_file, in one file.
MANUAL_EXAMPLE = """\
topic readwrite public/#
user alice
topic read sensors/#
topic deny sensors/secret
pattern write sensor/%u/data
pattern write $SYS/broker/connection/%c/state
"""


def test_mosquitto_aclfile_example():
    acl = Acl.parse(MOSQUITTO_EXAMPLE)
    assert acl.users == {
        None: (AclEntry(READ, "$SYS/#"),),
        "roger": (AclEntry(READ | WRITE, "foo/bar"),),  # no access word: readwrite
    }
    assert acl.patterns == (AclEntry(WRITE, "$SYS/broker/connection/%c/state"),)
    anonymous = acl.for_client("bridge1", None)
    assert anonymous.may_read("$SYS/broker/uptime")
    assert not anonymous.may_write("$SYS/broker/uptime")
    assert anonymous.may_write("$SYS/broker/connection/bridge1/state")
    assert not anonymous.may_write("$SYS/broker/connection/bridge2/state")
    assert not anonymous.may_read("foo/bar")
    roger = acl.for_client("r", "roger")
    assert roger.may_read("foo/bar") and roger.may_write("foo/bar")
    assert not roger.may_read("$SYS/broker/uptime")  # the anonymous section is not his
    assert roger.may_write("$SYS/broker/connection/r/state")  # patterns apply to everyone
    nobody = acl.for_client("n", "nobody")  # a user without a section: the patterns only
    assert not nobody.may_read("foo/bar") and not nobody.may_read("$SYS/x")


def test_manual_example_deny_and_user_pattern():
    acl = Acl.parse(MANUAL_EXAMPLE)
    alice = acl.for_client("c1", "alice")
    assert alice.may_read("sensors/t1") and not alice.may_write("sensors/t1")
    assert not alice.may_read("sensors/secret")  # deny comes first, wherever it stands
    assert alice.may_write("sensor/alice/data") and not alice.may_write("sensor/bob/data")
    assert not alice.may_read("public/x")  # the anonymous section only
    anonymous = acl.for_client("c2", None)
    assert anonymous.may_read("public/x") and anonymous.may_write("public/a/b")
    assert not anonymous.may_write("sensor/None/data")  # %u patterns skip anonymous clients


def test_client_id_pattern_in_the_middle_of_a_level():
    # The manual asks %c to fill its level; mosquitto substitutes it anywhere all the same.
    acl = Acl.parse("pattern readwrite dev/x%c/#\n")
    assert acl.for_client("7", None).may_write("dev/x7/out")


def test_names_with_wildcards_get_no_patterns():
    acl = Acl.parse("pattern readwrite clients/%c/#\npattern read users/%u\nuser a+b\ntopic t\n")
    assert acl.for_client("c", "u").may_read("users/u")
    sneaky = acl.for_client("#", None)  # would turn the pattern into clients/#/#
    assert not sneaky.may_read("clients/other/x")
    assert not acl.for_client("c", "+").may_read("users/+")
    assert not acl.for_client("c", "a+b").may_read("clients/c/x")  # no patterns for it
    assert acl.for_client("c", "a+b").may_read("t")  # its own section still applies


def test_empty_file_denies_everything():
    nobody = Acl.parse("# nothing granted\n\n").for_client("c", None)
    assert not nobody.may_read("a") and not nobody.may_write("a")
    assert not nobody.may_subscribe("#")


def test_deny_wins_over_an_earlier_grant_and_first_grant_decides():
    acl = Acl.parse("topic read a/#\ntopic write a/b\ntopic deny a/+/secret\n")
    c = acl.for_client("c", None)
    assert c.may_read("a/b") and c.may_write("a/b")  # a read entry is passed over for write
    assert not c.may_write("a/c")
    assert not c.may_read("a/x/secret") and c.may_read("a/x/open")


def test_dollar_topics_need_dollar_entries():
    everything = Acl.parse("topic readwrite #\npattern readwrite +/%c\n").for_client("c", None)
    assert everything.may_read("any/thing") and everything.may_write("x/c")
    assert not everything.may_read("$SYS/x") and not everything.may_write("$x/c")  # 4.7.2
    assert not everything.may_subscribe("$SYS/#")
    sys = Acl.parse("topic read $SYS/#\n").for_client("c", None)
    assert sys.may_read("$SYS/x") and sys.may_subscribe("$SYS/#")


def test_subscriptions_need_an_entry_that_covers_the_whole_filter():
    acl = Acl.parse(
        "topic read sensors/#\n"
        "topic deny sensors/secret\n"
        "topic read home/+/temperature\n"
        "topic write out/#\n"
    )
    c = acl.for_client("c", None)
    assert c.may_subscribe("sensors/#") and c.may_subscribe("sensors/+/t")
    assert c.may_subscribe("sensors/t1")
    assert not c.may_subscribe("sensors/secret")
    assert c.may_subscribe("home/+/temperature") and c.may_subscribe("home/kitchen/temperature")
    assert not c.may_subscribe("home/#")  # more than home/+/temperature
    assert not c.may_subscribe("home/+/+")
    assert not c.may_subscribe("out/#")  # write only
    assert not c.may_subscribe("#")


def test_mosquitto_reading_quirks():
    acl = Acl.parse(
        "topic read\n"  # one word: it is the topic, readwrite ("read" is not taken as access)
        "topic   write   a b  \n"  # runs of spaces between words; the topic may hold a space
        "user  bob smith \n"  # a user name may hold a space too
        "topic x\n"
    )
    assert acl.users[None] == (AclEntry(READ | WRITE, "read"), AclEntry(WRITE, "a b"))
    assert acl.users["bob smith"] == (AclEntry(READ | WRITE, "x"),)


def test_a_user_named_twice_gathers_both_sections():
    acl = Acl.parse("user a\ntopic x\nuser b\ntopic y\nuser a\ntopic z\n")
    assert [e.topic for e in acl.users["a"]] == ["x", "z"]


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("topic\n", 1, "`topic` needs a topic"),
        ("# ok\npattern   \n", 2, "`pattern` needs a topic"),
        ("topic rw a/b\n", 1, "access 'rw' is not read, write, readwrite or deny"),
        ("topic read a/#/b\n", 1, "'a/#/b' is not a valid topic filter (4.7.1)"),
        ("pattern write a/%c+\n", 1, "'a/%c+' is not a valid topic filter (4.7.1)"),
        ("user\n", 1, "`user` needs a user name"),
        (
            "  # indented comment\n",
            1,
            "'#' is not topic, pattern or user (a comment starts with '#' in the first column)",
        ),
        (
            "topic\tread a\n",
            1,
            "'topic\\tread' is not topic, pattern or user"
            " (a comment starts with '#' in the first column)",
        ),
        ("Topic a\n", 1, "'Topic' is not topic, pattern or user"),
    ],
)
def test_malformed_lines_name_the_line_and_the_problem(text, line, problem):
    with pytest.raises(ConfigFileError) as info:
        Acl.parse(text, "acl.conf")
    assert (info.value.source, info.value.line) == ("acl.conf", line)
    assert info.value.problem.startswith(problem)
