"""What an HTTP server answers for a sensor resource, shared by every HTTP server
(HTTP/1.1 and HTTP/2 in the simulator, HTTP/1.1 on real sockets).

Header sets are data: a scenario lists the exact extra headers (S1 keeps the
browser-like sets in its file so their byte count is visible); the server
adds only what depends on the answer, Content-Type and Content-Length.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, cast

from iotbench.apps.requesters import Done
from iotbench.metrics.items import Item

Header = tuple[str, str]


class Sensor(Protocol):
    """What a server answers from (apps/sensors.py): a reading and its format."""

    @property
    def content_format(self) -> int: ...

    def read(self) -> bytes: ...


#: CoAP Content-Format numbers of the sensors (apps/sensors.py) as media types.
MEDIA_TYPES = {
    0: "text/plain; charset=utf-8",
    42: "application/octet-stream",
    50: "application/json",
}


#: Status lines' reason phrases, for the statuses the servers send.
REASONS = {200: b"OK", 400: b"Bad Request", 404: b"Not Found", 405: b"Method Not Allowed"}
#: The methods the servers' read-only resources answer.
METHODS = ("GET", "HEAD")


def answer(
    resources: Mapping[str, object],
    path: str,
    extra_headers: Sequence[Header],
    method: str = "GET",
) -> tuple[int, list[Header], bytes]:
    """(status, headers, body) for a request of `path`: GET's; HEAD's, which is
    GET's headers without the content (RFC 9110 9.3.2); 405 with Allow for any
    other method, the resources being read-only (15.5.6)."""
    if method not in METHODS:
        return 405, [*extra_headers, ("Allow", ", ".join(METHODS)), ("Content-Length", "0")], b""
    status, headers, body = _get(resources, path, extra_headers)
    return status, headers, b"" if method == "HEAD" else body


def _get(
    resources: Mapping[str, object], path: str, extra_headers: Sequence[Header]
) -> tuple[int, list[Header], bytes]:
    # apps/sensors.py hands its sensors out as plain objects; they are all Sensors.
    sensor = cast("Sensor | None", resources.get(path.split("?", 1)[0]))
    if sensor is None:
        body = b"not found\n"
        headers = [*extra_headers, ("Content-Type", MEDIA_TYPES[0])]
        return 404, [*headers, ("Content-Length", str(len(body)))], body
    body = sensor.read()
    media = MEDIA_TYPES.get(sensor.content_format, MEDIA_TYPES[42])
    headers = [*extra_headers, ("Content-Type", media), ("Content-Length", str(len(body)))]
    return 200, headers, body


def host_header(address: str, port: int) -> str:
    """The Host (or :authority) value for an address and port (RFC 9110 7.2)."""
    host = f"[{address}]" if ":" in address else address
    return host if port == 80 else f"{host}:{port}"


class Exchange:
    """One request of an item: its response status and payload so far."""

    __slots__ = ("done", "item", "payload", "status")

    def __init__(self, item: Item, done: Done) -> None:
        self.item = item
        self.done = done
        self.status = 0
        self.payload = 0

    def finish(self, ok: bool) -> None:
        """End the item: delivered when the response came complete with a 2xx status."""
        self.done(self.item, ok and 200 <= self.status < 300, self.payload if ok else 0)
