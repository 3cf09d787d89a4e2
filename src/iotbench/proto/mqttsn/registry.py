"""Normal topic ids of one MQTT-SN client connection (6.5): topic name <-> topic id.

The gateway assigns ids (`assign`), the client learns them from REGACK,
SUBACK and the gateway's REGISTER (`learn`). Ids are valid for one client
only and never 0x0000 or 0xFFFF (reserved, 5.3.11). The gateway hands out
1, 2, 3, ... in order, so a trace reads the same in every run. Bounds on the
number of entries and on the octets of their names keep one client from
growing the gateway's memory (a count alone let 1,000 names of 60 kB in).
"""

from __future__ import annotations

__all__ = ["TopicRegistry"]

_MAX_ID = 0xFFFE


class TopicRegistry:
    __slots__ = ("_by_id", "_by_name", "_next", "max_bytes", "max_topics", "size_bytes")

    def __init__(self, max_topics: int, max_bytes: int | None = None) -> None:
        self.max_topics = max_topics
        self.max_bytes = max_bytes  # UTF-8 octets of all names; None: no bound
        self.size_bytes = 0
        self._by_name: dict[str, int] = {}
        self._by_id: dict[int, str] = {}
        self._next = 1

    def __len__(self) -> int:
        return len(self._by_id)

    def id_of(self, name: str) -> int | None:
        return self._by_name.get(name)

    def name_of(self, topic_id: int) -> str | None:
        return self._by_id.get(topic_id)

    def assign(self, name: str) -> int | None:
        """The id of `name`, assigning the next free one if it has none; None when full."""
        topic_id = self._by_name.get(name)
        if topic_id is not None:
            return topic_id
        if len(self._by_id) >= min(self.max_topics, _MAX_ID) or not self._fits(name):
            return None
        topic_id = self._next
        while topic_id in self._by_id:
            topic_id = topic_id % _MAX_ID + 1
        self._next = topic_id % _MAX_ID + 1
        self._add(topic_id, name)
        return topic_id

    def learn(self, topic_id: int, name: str) -> bool:
        """Record an id the peer assigned; False (nothing stored) when full or reserved."""
        if not 1 <= topic_id <= _MAX_ID:
            return False
        if self._by_id.get(topic_id) == name:
            return True
        self.forget(topic_id)
        old = self._by_name.get(name)
        if old is not None:
            self.forget(old)  # the gateway moved the name to a new id
        elif len(self._by_id) >= self.max_topics or not self._fits(name):
            return False
        self._add(topic_id, name)
        return True

    def forget(self, topic_id: int) -> None:
        name = self._by_id.pop(topic_id, None)
        if name is not None:
            del self._by_name[name]
            self.size_bytes -= _octets(name)

    def clear(self) -> None:
        self._by_name.clear()
        self._by_id.clear()
        self._next = 1
        self.size_bytes = 0

    def _fits(self, name: str) -> bool:
        return self.max_bytes is None or self.size_bytes + _octets(name) <= self.max_bytes

    def _add(self, topic_id: int, name: str) -> None:
        self._by_id[topic_id] = name
        self._by_name[name] = topic_id
        self.size_bytes += _octets(name)


def _octets(name: str) -> int:
    return len(name.encode("utf-8"))
