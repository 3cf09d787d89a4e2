"""MQTT topic names and topic filters (3.1.1 section 4.7).

- A topic name (in PUBLISH and a will) is at least one character and has no
  wildcards (4.7.3, 3.3.2.1).
- A topic filter (in SUBSCRIBE and UNSUBSCRIBE) is at least one character;
  `+` matches exactly one level and must fill its level; `#` matches the
  parent level and any number of child levels and must be the last
  character, alone in its level (4.7.1).
- Filters that start with a wildcard do not match topic names that start
  with `$` (4.7.2), so `#` never sees `$SYS/...`.
- Levels may be empty: "/a" has the levels "" and "a", and "+/+" matches it.

`covers(filter, other)` asks whether a filter matches every topic another
filter matches; the ACLs check a SUBSCRIBE against their entries with it.

U+0000 and the 65535-byte limit are the codec's business (1.5.3); these
checks are about the structure of the text.
"""

from __future__ import annotations

__all__ = ["covers", "is_valid_filter", "is_valid_topic", "matches"]


def is_valid_topic(topic: str) -> bool:
    """A topic name a PUBLISH may carry: non-empty, no `+` or `#`."""
    return bool(topic) and "+" not in topic and "#" not in topic


def is_valid_filter(topic_filter: str) -> bool:
    """A topic filter a SUBSCRIBE or UNSUBSCRIBE may carry (4.7.1)."""
    if not topic_filter:
        return False
    levels = topic_filter.split("/")
    last = len(levels) - 1
    for i, level in enumerate(levels):
        if "#" in level and (level != "#" or i != last):
            return False
        if "+" in level and level != "+":
            return False
    return True


def matches(topic_filter: str, topic: str) -> bool:
    """Whether `topic_filter` (valid) matches topic name `topic` (valid)."""
    if topic_filter == topic:
        return True
    if topic.startswith("$") and topic_filter[0] in "+#":
        return False  # 4.7.2
    f_levels = topic_filter.split("/")
    t_levels = topic.split("/")
    for i, level in enumerate(f_levels):
        if level == "#":
            return True  # matches the parent level too: "a/#" matches "a"
        if i >= len(t_levels):
            return False
        if level != "+" and level != t_levels[i]:
            return False
    return len(f_levels) == len(t_levels)


def covers(topic_filter: str, other: str) -> bool:
    """Whether `topic_filter` matches every topic name that `other` matches (both
    valid filters): "a/#" covers "a/+/c"; "a/+" does not cover "a/#".

    `other`'s "+" is taken as text, which only a "+" or "#" of `topic_filter`
    matches; its "#" stands for its parent level and everything below, which
    only a "#" of `topic_filter` at that level or above matches. This is the
    rule of mosquitto's dynamic-security plugin (sub_acl_check). For a topic
    name, covers() is matches().
    """
    if other == "#":
        return topic_filter == "#"
    if other.endswith("/#"):
        return topic_filter.endswith("#") and matches(topic_filter, other[:-2])
    return matches(topic_filter, other)
