"""Group communication helpers (RFC 7252 8, RFC 7390): the leisure and the /mc resource.

The endpoint does the messaging (CoapEndpoint.receive(..., multicast=True),
request(..., multicast=True)); this module holds what an application
chooses around it.

Leisure (RFC 7252 8.2; RFC 7390 2.8 keeps it for congestion control): a
member waits a random time in [0, Leisure] before answering a multicast
request, so that the answers of a group do not collide. The endpoint's
Leisure is CoapParams.default_leisure_s: DEFAULT_LEISURE (5 s) unless the
application configures another (RFC 7252 4.8.1 lets it). A rough lower
bound from the group size G, the response size S and a target data rate R
is lb_Leisure = S x G / R; leisure_lower_bound_s computes it, and an
application that knows its group sets default_leisure_s to it (or more).
One knob rather than a second parameter, because the Entity Manager and the
scenarios already read default_leisure_s as the members' Leisure.
DEFAULT_LEISURE itself is this bound for G = 50 members, S = 100 bytes and
R = 1 kB/s (8 kbit/s), as RFC 7390's successor draft-ietf-core-groupcomm-bis
spells out.

The /mc resource is how S6's Entity Manager tells a member to join or
leave a group (EXPERIMENTS.md S6): GET lists the groups the node joined
(text/plain, one address per line, in the order joined); POST with the
query act=add or act=del and the 16-byte IPv6 group address as payload
joins or leaves. The node supplies `join`, `leave` and `groups`; `join`
and `leave` may raise OSError (the operating system refused, e.g. no
multicast on the interface), which becomes 5.00 with the OS's reason.
Text/plain rather than link-format: the list is of addresses, not of links
to resources, and S6's Entity Manager only needs the codes.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

from .codec import Code, Message
from .endpoint import CoapEndpoint, ResourceResponse
from .resources import CT_TEXT_PLAIN

MC_PATH = "/mc"


def leisure_lower_bound_s(response_bytes: int, group_size: int, target_rate_bps: float) -> float:
    """lb_Leisure = S x G / R (RFC 7252 8.2) in seconds, for responses
    of S bytes from G members at a target rate of R bit/s (so S x 8 x G / R)."""
    if not (response_bytes >= 0 and group_size >= 1 and target_rate_bps > 0):
        raise ValueError("need S >= 0 bytes, G >= 1 members and R > 0 bit/s")
    return response_bytes * 8 * group_size / target_rate_bps


def _text(code: int, message: str) -> ResourceResponse:
    return ResourceResponse(code, message.encode("utf-8"), CT_TEXT_PLAIN)


def serve_membership(
    endpoint: CoapEndpoint,
    join: Callable[[bytes], None],
    leave: Callable[[bytes], None],
    groups: Callable[[], list[bytes]],
) -> None:
    """Serve /mc on `endpoint`: GET lists the groups, POST ?act=add|del joins or leaves."""

    def handler(request: Message, addr) -> ResourceResponse:
        if request.code == Code.GET:
            lines = [str(ipaddress.IPv6Address(g)) for g in groups()]
            return _text(Code.CONTENT, "\n".join(lines))
        acts = [q for q in request.uri_query if q.startswith("act=")]
        if len(acts) != 1 or acts[0] not in ("act=add", "act=del"):
            return _text(Code.BAD_REQUEST, "POST /mc needs the query act=add or act=del, once")
        addr16 = request.payload
        if len(addr16) != 16:
            return _text(
                Code.BAD_REQUEST,
                f"the payload is the 16-byte IPv6 group address, not {len(addr16)} bytes",
            )
        group = ipaddress.IPv6Address(addr16)
        if not group.is_multicast:
            return _text(Code.BAD_REQUEST, f"{group} is not a multicast address")
        if acts[0] == "act=add":
            if addr16 in groups():
                return _text(Code.CHANGED, f"already in {group}")
            try:
                join(addr16)
            except OSError as exc:
                reason = exc.strerror or str(exc)
                return _text(Code.INTERNAL_SERVER_ERROR, f"cannot join {group}: {reason}")
            return _text(Code.CHANGED, f"joined {group}")
        if addr16 not in groups():
            return _text(Code.NOT_FOUND, f"not in {group}")
        try:
            leave(addr16)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            return _text(Code.INTERNAL_SERVER_ERROR, f"cannot leave {group}: {reason}")
        return _text(Code.DELETED, f"left {group}")

    endpoint.add_resource(
        MC_PATH, handler, methods={Code.GET, Code.POST}, content_format=CT_TEXT_PLAIN
    )
