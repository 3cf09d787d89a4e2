"""An entity's profile: what a client sends to create it, validated field by field.

A profile is a JSON object (Content-Format 50, application/json):

    {"name": "temps",                                  optional; else e1, e2, ...
     "er": ["coap://[fd00::2]/s/t", "coap://[fd00::3]/s/t"],   member resources
     "emt": "con",        message type to members: con (default) or non
     "ect": "unicast",    unicast (default) or multicast; only at creation
     "enr": 2,            replies to wait for (default: all members)
     "eo": ["avg", "max"], the operations it offers on the replies (lst, avg,
                          min, max), a list whose first entry is the default;
                          one name alone is a list of one; absent: all four,
                          lst first
     "delay": 100}        ms between successive unicast requests (default 0)

The study (EXPERIMENTS.md, S6) names the fields but not the encoding; JSON
is what a CoAP client library can produce without a CoRE-specific encoder,
and it carries lists and numbers without escaping rules of our own. The EM
adds `mcstURI` (multicast entities) when it returns a profile.

Every problem is a ProfileError carrying the CoAP response code and a
message that names the field, the value and what is allowed.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, replace

from iotbench.proto.coap.codec import Code
from iotbench.proto.coap.uri import CoapUriError, compose_coap_uri, parse_coap_uri, uri_scheme

EMT = ("con", "non")
ECT = ("unicast", "multicast")
EO = ("lst", "avg", "min", "max")
CT_JSON = 50
FIELDS = ("name", "er", "emt", "ect", "enr", "eo", "delay")
#: Fields a URI query may override for one request (EXPERIMENTS.md S6).
QUERY_FIELDS = ("emt", "enr", "eo", "delay")
MAX_DELAY_MS = 60_000
_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,32}$")


class ProfileError(ValueError):
    """A profile or an override the EM refuses: `code` is the CoAP response."""

    def __init__(self, message: str, code: int = Code.BAD_REQUEST) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class Member:
    """One member resource: its URI and where a request to it goes."""

    uri: str
    host: str
    port: int
    path: tuple[str, ...]
    query: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Profile:
    """A validated profile; enr None means all members."""

    members: tuple[Member, ...]
    emt: str = "con"
    ect: str = "unicast"
    enr: int | None = None
    eo: tuple[str, ...] = EO  # the operations offered; the first is the default
    delay_ms: float = 0.0
    mcst_uri: str | None = None

    @property
    def operation(self) -> str:
        """What a query does with the replies: the default operation (a query's
        `eo=` override leaves only its choice)."""
        return self.eo[0]

    @property
    def replies_wanted(self) -> int:
        return len(self.members) if self.enr is None else self.enr

    def to_json(self, name: str) -> bytes:
        doc: dict[str, object] = {
            "name": name,
            "er": [m.uri for m in self.members],
            "emt": self.emt,
            "ect": self.ect,
            "enr": self.replies_wanted,
            "eo": list(self.eo),
            "delay": self.delay_ms,
        }
        if self.mcst_uri is not None:
            doc["mcstURI"] = self.mcst_uri
        return json.dumps(doc, separators=(",", ":")).encode("utf-8")


def parse_member(uri: object, index: int) -> Member:
    if not isinstance(uri, str):
        raise ProfileError(f"er[{index}] must be a coap:// URI string, not {_show(uri)}")
    try:
        scheme = uri_scheme(uri)
        host, port, path, query = parse_coap_uri(uri)
    except CoapUriError as exc:
        raise ProfileError(f"er[{index}] {uri!r} is not a CoAP URI: {exc}") from None
    if scheme != "coap":
        raise ProfileError(f"er[{index}] {uri!r}: only coap:// members are supported")
    canonical = compose_coap_uri(host, port, path, query)
    return Member(canonical, host, port, tuple(path), tuple(query))


def parse_profile(
    payload: bytes, content_format: int | None, max_members: int
) -> tuple[str | None, Profile]:
    """The name (None: the EM picks one) and profile of a creation request."""
    doc = _json_object(payload, content_format)
    _known_keys(doc, FIELDS)
    name = doc.get("name")
    if name is not None and (not isinstance(name, str) or not _NAME_RE.match(name)):
        raise ProfileError(f"name must be 1-32 letters, digits, '-' or '_', not {_show(name)}")
    if "er" not in doc:
        raise ProfileError("er (the member resource URIs) is required")
    members = _members(doc["er"], max_members)
    ect = _choice(doc, "ect", ECT, "unicast")
    emt = _choice(doc, "emt", EMT, "non" if ect == "multicast" else "con")
    profile = Profile(members, emt=emt, ect=ect)
    profile = _with_settings(profile, doc)
    _check_multicast(profile)
    return name, profile


def update_profile(
    profile: Profile, payload: bytes, content_format: int | None, max_members: int
) -> Profile:
    """A PUT: the fields given replace the stored ones; ect cannot change."""
    doc = _json_object(payload, content_format)
    _known_keys(doc, FIELDS)
    if "name" in doc:
        raise ProfileError("name cannot change: create a new entity instead")
    if "ect" in doc and doc["ect"] != profile.ect:
        raise ProfileError(f"ect is set at creation ({profile.ect}); create a new entity instead")
    if "er" in doc:
        members = _members(doc["er"], max_members)
        if profile.ect == "multicast" and members != profile.members:
            raise ProfileError("the members of a multicast entity are set at creation")
        profile = replace(profile, members=members, enr=None)
    profile = _with_settings(profile, doc)
    return profile


def apply_query(profile: Profile, query: list[str]) -> Profile:
    """Per-request overrides from URI query arguments (emt, enr, eo, delay)."""
    doc: dict[str, object] = {}
    for arg in query:
        key, sep, value = arg.partition("=")
        if key not in QUERY_FIELDS:
            raise ProfileError(
                f"query argument {arg!r}: a request may override {', '.join(QUERY_FIELDS)}"
            )
        if not sep or key in doc:
            raise ProfileError(f"query argument {arg!r}: give {key}=<value> once")
        if key in ("enr", "delay"):
            try:
                doc[key] = float(value) if key == "delay" else int(value)
            except ValueError:
                raise ProfileError(f"{key}={value!r} is not a number") from None
        else:
            doc[key] = value
    return _with_settings(profile, doc, query=True)


# ---- helpers ----------------------------------------------------------------------


def _show(value: object) -> str:
    text = json.dumps(value) if not isinstance(value, bytes) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _json_object(payload: bytes, content_format: int | None) -> dict:
    if content_format not in (None, CT_JSON):
        raise ProfileError(
            f"a profile is application/json (Content-Format {CT_JSON}), not {content_format}",
            Code.UNSUPPORTED_CONTENT_FORMAT,
        )
    try:
        doc = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ProfileError(f"the profile is not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise ProfileError(f"the profile must be a JSON object, not {_show(doc)}")
    return doc


def _known_keys(doc: dict, allowed: tuple[str, ...]) -> None:
    for key in doc:
        if key not in allowed:
            raise ProfileError(f"unknown field {key!r}; the fields are {', '.join(allowed)}")


def _members(er: object, max_members: int) -> tuple[Member, ...]:
    if not isinstance(er, list) or not er:
        raise ProfileError(f"er must be a non-empty list of member URIs, not {_show(er)}")
    if len(er) > max_members:
        raise ProfileError(f"er has {len(er)} members; this EM takes at most {max_members}")
    members = tuple(parse_member(uri, i) for i, uri in enumerate(er))
    seen: set[str] = set()
    for i, m in enumerate(members):
        if m.uri in seen:
            raise ProfileError(f"er[{i}] {m.uri} is listed twice")
        seen.add(m.uri)
    return members


def _choice(doc: dict, key: str, allowed: tuple[str, ...], default: str) -> str:
    value = doc.get(key, default)
    if value not in allowed:
        raise ProfileError(f"{key} must be one of {', '.join(allowed)}, not {_show(value)}")
    return value


def _operations(value: object, offered: tuple[str, ...], query: bool) -> tuple[str, ...]:
    """A profile's eo (a list of operations, or one name), or a query's choice
    among the entity's."""
    if query:
        if value not in offered:
            raise ProfileError(
                f"eo={_show(value)}: this entity offers {', '.join(offered)} (its profile's eo)"
            )
        return (value,)
    ops = [value] if isinstance(value, str) else value
    if not isinstance(ops, list) or not ops or len(set(map(str, ops))) != len(ops):
        raise ProfileError(
            f"eo must be a list of distinct operations ({', '.join(EO)}), its first the "
            f"default, not {_show(value)}"
        )
    for op in ops:
        if op not in EO:
            raise ProfileError(f"eo: {_show(op)} is not one of {', '.join(EO)}")
    return tuple(ops)


def _with_settings(profile: Profile, doc: dict, query: bool = False) -> Profile:
    """emt, enr, eo and delay from `doc` (a profile, or with `query` a request's
    overrides), checked."""
    emt = _choice(doc, "emt", EMT, profile.emt)
    if profile.ect == "multicast" and emt != "non":
        raise ProfileError("a multicast entity sends non-confirmable requests: emt must be non")
    eo = profile.eo
    if "eo" in doc:
        eo = _operations(doc["eo"], profile.eo if query else EO, query)
    enr = profile.enr
    if "enr" in doc:
        enr = doc["enr"]
        if (
            isinstance(enr, bool)
            or not isinstance(enr, int)
            or not 1 <= enr <= len(profile.members)
        ):
            raise ProfileError(
                f"enr must be a whole number from 1 to {len(profile.members)} (the members), "
                f"not {_show(enr)}"
            )
    delay = profile.delay_ms
    if "delay" in doc:
        delay = doc["delay"]
        if (
            isinstance(delay, bool)
            or not isinstance(delay, (int, float))
            or not math.isfinite(delay)
            or not 0 <= delay <= MAX_DELAY_MS
        ):
            raise ProfileError(f"delay must be 0 to {MAX_DELAY_MS} ms, not {_show(delay)}")
    return replace(profile, emt=emt, eo=eo, enr=enr, delay_ms=float(delay))


def _check_multicast(profile: Profile) -> None:
    if profile.ect != "multicast":
        return
    first = profile.members[0]
    for i, m in enumerate(profile.members[1:], start=1):
        if (m.path, m.query, m.port) != (first.path, first.query, first.port):
            raise ProfileError(
                "the members of a multicast entity must share one path and port "
                f"(one request to the group reaches them all): er[0] "
                f"{_path(first)} port {first.port}, er[{i}] {_path(m)} port {m.port}"
            )


def _path(m: Member) -> str:
    return "/" + "/".join(m.path) + ("?" + "&".join(m.query) if m.query else "")
