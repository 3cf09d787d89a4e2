"""Topic access control in mosquitto's acl_file format, checked as mosquitto checks it.

The file (mosquitto.conf(5), acl_file):

    # anonymous clients (no user name): the entries before any `user` line
    topic read public/#
    user alice
    topic readwrite home/#
    topic deny home/alarm/code
    # every client, wherever the line stands: %c is its client id, %u its user name
    pattern write devices/%c/#

- `topic [read|write|readwrite|deny] TOPIC`: an entry of the section it is in,
  readwrite when the access word is absent. TOPIC is a topic filter and is the
  rest of the line, so it may hold spaces.
- `user NAME`: the entries that follow, up to the next `user`, are NAME's. A
  name given twice gathers both sections.
- `pattern [read|write|readwrite|deny] PATTERN`: an entry for every client,
  with %c and %u replaced. A pattern with %u does not apply to clients
  without a user name.
- A comment is a line whose first character is "#"; blank lines are skipped.
  Words are separated by spaces, not tabs. These are mosquitto's reading
  rules to the letter (its aclfile__parse), quirks included: `topic read`
  alone grants readwrite on a topic named "read".

Checking (mosquitto 2.0's mosquitto_acl_check_default): with an ACL file,
whatever is not granted is denied, and an empty file denies everything. A
client's entries are its user's section (the anonymous one if it has no
user name; none if its user has no section), then the patterns. Within
each, deny entries come first; the first entry that matches decides: deny
refuses, an entry with the access asked for grants, one without it is
passed over. A client whose id or user name holds "+" or "#" gets no pattern
entries, so that it cannot widen them. An entry matches a topic name as a
topic filter matches it (topics.py: matches, 4.7.2's "$" rule included);
it matches a SUBSCRIBE's filter when it covers every topic the filter
matches (topics.py: covers). Read access is what receiving and subscribing
need, write access what publishing needs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from .conffile import BLANKS, ConfigFileError, numbered_lines
from .topics import covers, is_valid_filter, matches

__all__ = ["READ", "WRITE", "Acl", "AclEntry", "ClientAcl"]

READ, WRITE = 1, 2
DENY = 0
ACCESS = {"read": READ, "write": WRITE, "readwrite": READ | WRITE, "deny": DENY}
#: A topic filter is an MQTT string (1.5.3).
MAX_TOPIC_BYTES = 65535

_PLACEHOLDER = re.compile("%([cu])")


@dataclass(frozen=True, slots=True)
class AclEntry:
    """One `topic` or `pattern` line: access bits (0: deny) and its topic filter."""

    access: int
    topic: str


def _deny_first(entries: Sequence[AclEntry]) -> tuple[AclEntry, ...]:
    """The order mosquitto checks entries in: every deny, then the rest in file order."""
    return tuple(e for e in entries if e.access == DENY) + tuple(
        e for e in entries if e.access != DENY
    )


class Acl:
    """A parsed ACL file: entries per user (None: anonymous clients) and patterns."""

    __slots__ = ("patterns", "users")

    def __init__(
        self,
        users: Mapping[str | None, Sequence[AclEntry]] | None = None,
        patterns: Sequence[AclEntry] = (),
    ) -> None:
        self.users = {user: _deny_first(entries) for user, entries in (users or {}).items()}
        self.patterns = _deny_first(patterns)

    @classmethod
    def parse(cls, data: str | bytes, source: str = "ACL file") -> Acl:
        """An ACL file's text; ConfigFileError naming `source` and the line if bad."""
        users: dict[str | None, list[AclEntry]] = {}
        patterns: list[AclEntry] = []
        user: str | None = None
        for number, line in numbered_lines(data, source):
            keyword, rest = _word(line)
            if keyword in ("topic", "pattern"):
                entry = _entry(keyword, rest, source, number)
                if keyword == "topic":
                    users.setdefault(user, []).append(entry)
                else:
                    patterns.append(entry)
            elif keyword == "user":
                user = rest.strip(BLANKS)
                if not user:
                    raise ConfigFileError(source, number, "`user` needs a user name")
            else:
                raise ConfigFileError(
                    source,
                    number,
                    f"{keyword!r} is not topic, pattern or user"
                    " (a comment starts with '#' in the first column)",
                )
        return cls(users, patterns)

    def for_client(self, client_id: str, username: str | None) -> ClientAcl:
        """The entries that apply to one client, patterns filled in, in checking order."""
        entries = list(self.users.get(username, ()))

        def fill(m: re.Match[str]) -> str:
            if m.group(1) == "c":
                return client_id
            assert username is not None  # patterns with %u are skipped without a user name
            return username

        if not _widens(client_id) and not (username is not None and _widens(username)):
            for pattern in self.patterns:
                if username is None and "%u" in pattern.topic:
                    continue
                topic = _PLACEHOLDER.sub(fill, pattern.topic)
                if is_valid_filter(topic):  # an empty user name can leave nothing
                    entries.append(AclEntry(pattern.access, topic))
        return ClientAcl(tuple(entries))


class ClientAcl:
    """What one client may do, from its entries in checking order (Acl.for_client)."""

    __slots__ = ("entries",)

    def __init__(self, entries: tuple[AclEntry, ...]) -> None:
        self.entries = entries

    def may_read(self, topic: str) -> bool:
        """Whether a message published to topic name `topic` may reach this client."""
        return self._allows(READ, topic, matches)

    def may_write(self, topic: str) -> bool:
        """Whether this client may publish to topic name `topic`."""
        return self._allows(WRITE, topic, matches)

    def may_subscribe(self, topic_filter: str) -> bool:
        """Whether this client may read every topic `topic_filter` matches."""
        return self._allows(READ, topic_filter, covers)

    def _allows(self, access: int, topic: str, match: Callable[[str, str], bool]) -> bool:
        for entry in self.entries:
            if match(entry.topic, topic):
                if entry.access == DENY:
                    return False
                if entry.access & access:
                    return True
        return False


def _widens(name: str) -> bool:
    """A client id or user name that would put wildcards into a pattern."""
    return "+" in name or "#" in name


def _word(text: str) -> tuple[str, str]:
    """The first space-separated word of `text` and what follows the space after it
    (C's strtok with " ", then the rest of the line)."""
    word, _, rest = text.lstrip(" ").partition(" ")
    return word, rest


def _entry(keyword: str, rest: str, source: str, number: int) -> AclEntry:
    """`topic`/`pattern` [ACCESS] TOPIC: the word after the keyword is the access when
    more follows it, else the topic itself (then readwrite), as mosquitto reads it."""
    access_word, topic = _word(rest)
    topic = topic.strip(BLANKS)
    if not access_word:
        raise ConfigFileError(source, number, f"`{keyword}` needs a topic")
    if not topic:
        topic, access_word = access_word, "readwrite"
    access = ACCESS.get(access_word)
    if access is None:
        raise ConfigFileError(
            source, number, f"access {access_word!r} is not read, write, readwrite or deny"
        )
    if not is_valid_filter(topic):
        raise ConfigFileError(source, number, f"{topic!r} is not a valid topic filter (4.7.1)")
    if len(topic.encode()) > MAX_TOPIC_BYTES:
        raise ConfigFileError(source, number, f"topic over {MAX_TOPIC_BYTES} bytes")
    return AclEntry(access, topic)
