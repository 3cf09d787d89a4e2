"""Topic names, topic filters and wildcard matching: the examples of 3.1.1 section 4.7."""

import pytest

from iotbench.proto.mqtt.topics import is_valid_filter, is_valid_topic, matches

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
