"""Server-side resources: what a handler returns, and /.well-known/core (RFC 6690).

A handler is any callable ``handler(request: Message, addr)`` returning one of:

- a ResourceResponse;
- a tuple ``(code, payload[, content_format[, options]])``;
- bytes (a 2.05 Content payload) or str (a 2.05 text/plain payload);
- a Deferred, to answer later with ``CoapEndpoint.respond(now, deferred, result)``.

A handler that raises, or returns anything else, is answered with 5.00 and
counted.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import quote

from .codec import Code, Message
from .observe import Observer

__all__ = [
    "CT_LINK_FORMAT",
    "Deferred",
    "CT_TEXT_PLAIN",
    "WELL_KNOWN_CORE",
    "Handler",
    "Resource",
    "ResourceResponse",
    "link_format",
    "normalize_path",
    "to_response",
]

#: Content-Format numbers used here (RFC 7252 12.3).
CT_TEXT_PLAIN = 0
CT_LINK_FORMAT = 40

WELL_KNOWN_CORE = "/.well-known/core"

OptionValue = bytes | str | int


@dataclass(slots=True)
class ResourceResponse:
    """What a handler wants sent back.

    delay_s: simulated processing time; the response leaves that much later
    (and, for a CON request slower than CoapParams.separate_response_after_s,
    as a separate response after an empty ACK). Notifications ignore it.
    """

    code: int = Code.CONTENT
    payload: bytes = b""
    content_format: int | None = None
    options: Sequence[tuple[int, OptionValue]] = ()
    delay_s: float = 0.0


class Deferred:
    """Returned by a handler that answers later (an Entity Manager waiting for
    its members): the endpoint keeps the request, and the application calls
    ``CoapEndpoint.respond(now, deferred, result)`` with any handler result.

    A CON request gets an empty ACK once CoapParams.separate_response_after_s
    has passed (at once when that is None; RFC 7252 5.2.2) and the answer as
    a separate CON response; an answer ready sooner rides on the ACK. A NON
    request gets a NON answer, a multicast one after a leisure. A
    retransmitted request never reaches the handler again. Observe
    registrations are not taken from a deferred answer. A Deferred answers
    one request: return a new one each time.
    """

    __slots__ = ("addr", "answered", "request", "_state")

    def __init__(self) -> None:
        self.request: Message | None = None  # set by the endpoint that took it
        self.addr: Hashable | None = None
        self.answered = False
        self._state: object = None


HandlerResult = ResourceResponse | tuple | bytes | str | Deferred
Handler = Callable[[Message, Hashable], HandlerResult]


def _payload_bytes(payload: object) -> bytes:
    if isinstance(payload, str):
        return payload.encode("utf-8")
    if isinstance(payload, (bytes, bytearray, memoryview)):
        return bytes(payload)
    raise TypeError(f"a payload must be bytes or str, not {type(payload).__name__}")


def to_response(result: object) -> ResourceResponse:
    """Coerce a handler's return value; TypeError (or ValueError) for anything else."""
    if isinstance(result, ResourceResponse):
        return result
    if isinstance(result, bytes):
        return ResourceResponse(payload=result)
    if isinstance(result, str):
        return ResourceResponse(payload=result.encode("utf-8"), content_format=CT_TEXT_PLAIN)
    if isinstance(result, tuple) and 2 <= len(result) <= 4:
        code, payload, *rest = result
        content_format = rest[0] if rest else None
        options = rest[1] if len(rest) > 1 else ()
        return ResourceResponse(int(code), _payload_bytes(payload), content_format, options)
    raise TypeError(
        "a handler must return ResourceResponse, (code, payload[, content_format[, options]]),"
        f" bytes or str, not {type(result).__name__}"
    )


def normalize_path(path: str | Sequence[str]) -> str:
    """ "temp", "/temp" and ["temp"] all become "/temp"; "" and "/" become "/"."""
    if not isinstance(path, str):
        return "/" + "/".join(path)
    return path if path.startswith("/") else "/" + path


@dataclass(slots=True, eq=False)
class Resource:
    """One resource on a server, with its observers (RFC 7641 4.1 list of observers).

    observers are keyed by (client endpoint, token), as RFC 7641 4.1 keys its
    entries. seq is the last Observe sequence number used (24 bits, wraps).
    """

    path: str
    handler: Handler
    observable: bool = False
    methods: frozenset[int] | None = None
    notify_confirmable: bool = False
    content_format: int | None = None
    attributes: Mapping[str, str | int | None] = field(default_factory=dict)
    seq: int = 0
    observers: dict[tuple[Hashable, bytes], Observer] = field(default_factory=dict)

    def next_seq(self) -> int:
        """A new Observe value, strictly increasing modulo 2**24 (RFC 7641 4.4)."""
        self.seq = (self.seq + 1) & 0xFFFFFF
        return self.seq

    def link_attributes(self) -> list[tuple[str, str | int | None]]:
        """Link-format attributes in output order: ct, extra ones, then obs."""
        attrs: list[tuple[str, str | int | None]] = []
        if self.content_format is not None:
            attrs.append(("ct", self.content_format))
        attrs.extend(self.attributes.items())
        if self.observable:
            attrs.append(("obs", None))
        return attrs


# RFC 3986 pchar characters that need no percent-encoding in a link target.
_SEGMENT_SAFE = "!$&'()*+,;=:@"


def _link_target(path: str) -> str:
    return "/".join(quote(seg, safe=_SEGMENT_SAFE) for seg in path.split("/"))


def _link_param(name: str, value: str | int | None) -> str:
    if value is None:
        return name
    if isinstance(value, int):
        return f"{name}={value}"
    # RFC 6690 2: rt, if, title and most others are quoted strings.
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'{name}="{escaped}"'


def _matches(candidate: str, pattern: str) -> bool:
    """RFC 6690 4.1: a trailing "*" matches any suffix."""
    if pattern.endswith("*"):
        return candidate.startswith(pattern[:-1])
    return candidate == pattern


def _filter_ok(resource: Resource, query: Sequence[str]) -> bool:
    """RFC 6690 4.1 filtering; only the first query argument is used, as servers MAY."""
    if not query:
        return True
    name, _, pattern = query[0].partition("=")
    if name == "href":
        return _matches(resource.path, pattern)
    for attr, value in resource.link_attributes():
        if attr != name:
            continue
        if value is None:
            return pattern == ""
        # rt and if values are space-separated lists; any member may match.
        if any(_matches(v, pattern) for v in str(value).split(" ")):
            return True
    return False


def link_format(resources: Iterable[Resource], query: Sequence[str] = ()) -> bytes:
    """The /.well-known/core payload (RFC 6690 application/link-format)."""
    links = []
    for r in resources:
        if r.path == WELL_KNOWN_CORE or not _filter_ok(r, query):
            continue
        params = "".join(";" + _link_param(n, v) for n, v in r.link_attributes())
        links.append(f"<{_link_target(r.path)}>{params}")
    return ",".join(links).encode("utf-8")
