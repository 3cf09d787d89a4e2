"""Topic names, topic filters and wildcard matching: the examples of 3.1.1 section 4.7."""

import pytest

from iotbench.proto.mqtt.topics import covers, is_valid_filter, is_valid_topic, matches

# (filter, topic, matches?) - the non-normative examples of 4.7.1.2, 4.7.1.3 and 4.7.2.
MATCH_TABLE = [
    ("sport/tennis/player1/#", "sport/tennis/player1", True),
    ("sport/tennis/player1/#", "sport/tennis/player1/ranking", True),
    ("sport/tennis/player1/#", "sport/tennis/player1/score/wimbledon", True),
    ("sport/#", "sport", True),  # "#" also matches the parent level
    ("#", "sport/tennis", True),
    ("#", "/", True),
    ("sport/tennis/+", "sport/tennis/player1", True),
    ("sport/tennis/+", "sport/tennis/player2", True),
    ("sport/tennis/+", "sport/tennis/player1/ranking", False),
    ("sport/+", "sport", False),
    ("sport/+", "sport/", True),
    ("+", "sport", True),
    ("+", "sport/tennis", False),
    ("+/+", "/finance", True),
    ("/+", "/finance", True),
    ("+", "/finance", False),
    ("+/tennis/#", "sport/tennis/player1", True),
    ("+/tennis/#", "sport/tennis", True),
    ("a/b", "a/b", True),
    ("a/b", "a/B", False),  # case sensitive
    ("a/b", "a/b/", False),
    ("a//b", "a//b", True),
    ("a/+/b", "a//b", True),
    # 4.7.2: wildcards at the start do not match topics beginning with "$".
    ("#", "$SYS/broker/clients", False),
    ("+/monitor/Clients", "$SYS/monitor/Clients", False),
    ("$SYS/#", "$SYS/monitor/Clients", True),
    ("$SYS/monitor/+", "$SYS/monitor/Clients", True),
    ("$SYS", "$SYS", True),
    ("a/#", "a/$x", True),  # "$" only matters in the first character of the topic
]


@pytest.mark.parametrize(("topic_filter", "topic", "expected"), MATCH_TABLE)
def test_wildcard_matching_table(topic_filter, topic, expected):
    assert is_valid_filter(topic_filter) and is_valid_topic(topic)
    assert matches(topic_filter, topic) is expected


@pytest.mark.parametrize(
    "topic_filter",
    ["#", "+", "sport/#", "sport/tennis/#", "+/tennis/#", "sport/+/player1", "/", "//", "$SYS/#"],
)
def test_valid_filters(topic_filter):
    assert is_valid_filter(topic_filter)


@pytest.mark.parametrize(
    "topic_filter", ["", "sport/tennis#", "sport/tennis/#/ranking", "sport+", "#/a", "a/#/", "++"]
)
def test_invalid_filters(topic_filter):
    assert not is_valid_filter(topic_filter)


@pytest.mark.parametrize(
    ("topic", "valid"),
    [("a", True), ("/", True), ("", False), ("a/+", False), ("#", False), ("a#b", False)],
)
def test_topic_names(topic, valid):
    assert is_valid_topic(topic) is valid


# ---- one filter covering another (what an ACL entry must do for a SUBSCRIBE) --------------

COVERS_TABLE = [
    ("a/#", "a/+/c", True),
    ("a/#", "a/#", True),
    ("a/#", "a", True),
    ("#", "#", True),
    ("#", "a/+/#", True),
    ("a/+", "a/+", True),
    ("a/+", "a/b", True),
    ("a/+", "a/#", False),  # a/# also matches a and a/b/c
    ("a/+/#", "a/#", False),  # a/# also matches a
    ("a/b", "a/+", False),
    ("a/b/#", "a/#", False),
    ("+/#", "#", False),  # the same topics in fact, but only "#" is taken to cover "#"
    ("#", "$SYS/#", False),  # 4.7.2
    ("$SYS/#", "$SYS/+", True),
]


@pytest.mark.parametrize(("topic_filter", "other", "expected"), COVERS_TABLE)
def test_covers_table(topic_filter, other, expected):
    assert covers(topic_filter, other) is expected


def _filters(levels, depth):
    out = [""]
    for _ in range(depth):
        out = [f"{p}/{x}" if p else x for p in out for x in levels] + out
    return sorted({f for f in out if f and is_valid_filter(f)})


def test_covers_means_matching_every_topic_the_other_matches():
    """Exhaustively over small filters: covers() is never wrong to say yes, and says
    no only in the one case of "+/#" against "#" (the same topics, refused)."""
    filters = _filters(["a", "+", "#", "$s"], 3)
    topics = _filters(["a", "c", "", "$s"], 4)
    for f in filters:
        for other in filters:
            matched = [t for t in topics if matches(other, t)]
            exact = all(matches(f, t) for t in matched)
            if covers(f, other):
                assert exact, (f, other)
            elif exact:
                assert other == "#" and f.endswith("/#"), (f, other)
