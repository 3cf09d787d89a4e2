"""What keeps an Entity Manager from working for anyone without bound: who owns an
entity, what one client may hold, and what one query may cost.

An EM sends requests on its clients' behalf, so a small request to it can
become many requests to others: a 19-byte query of an entity whose 64
members are entities of 64 members each is 4,096 requests. The bounds here
(all in EmParams, docs/coap-em.md "Safeguards") are what a client may make
the EM do:

- a query's cost is known before anything is sent, from the entities it
  would pass through (their profiles, nested entities of this EM included):
  the requests to members, their bytes (every transmission a CON request may
  take counted), and the levels of nesting. A query over a bound is refused
  whole, not answered in part: a partial answer would look like members that
  failed.
- an entity belongs to the client that created it (its authenticated
  identity, else its address and port); others may query it, not change or
  delete it, unless the operator shares every entity.
- limits per client count a client by its network (an IPv6 /64 by default in
  real mode: one host usually holds a whole /64, so counting addresses would
  give it 2^64 clients' share), and global caps stand beside them.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from iotbench.apps.em.profile import Member, Profile
from iotbench.proto.coap.blockwise import szx_of
from iotbench.proto.coap.codec import BlockOption, Code, Message, Type, encode
from iotbench.proto.coap.options import Opt
from iotbench.proto.coap.params import CoapParams


@dataclass(frozen=True, slots=True)
class Cost:
    """What one query makes the EM send, across every level of nesting."""

    requests: int  # requests to members (their first transmissions)
    bytes: int  # their bytes, with every retransmission a CON request may take
    depth: int  # levels of entities passed through (1: members only)


def member_request_bytes(member: Member, confirmable: bool, coap: CoapParams) -> int:
    """The bytes one request to `member` may put on the wire: the request as the
    endpoint builds it (token, Uri-Path, Uri-Query, Block2's size), times the
    transmissions CoAP allows it (1 + MAX_RETRANSMIT for CON, RFC 7252 4.2)."""
    msg = Message(Type.CON if confirmable else Type.NON, Code.GET, 0, bytes(coap.token_length))
    msg.uri_path = list(member.path)
    for q in member.query:
        msg.add_option(Opt.URI_QUERY, q)
    if coap.block_size_bytes is not None:  # early size negotiation (RFC 7959 2.4)
        msg.block2 = BlockOption(0, False, szx_of(coap.block_size_bytes))
    transmissions = 1 + coap.max_retransmit if confirmable else 1
    return len(encode(msg)) * transmissions


def query_cost(
    profile: Profile,
    nested: Callable[[Member], Profile | None],
    coap: CoapParams,
    stop_at: Cost | None = None,
) -> Cost:
    """The cost of querying an entity with `profile`: `nested(member)` is the
    profile of a member that is an entity of this EM (asked without the
    network, with its own profile), else None.

    `stop_at`: stop counting once any figure passes it (the result then
    passes it too), so that a profile built to be expensive is not expensive
    to price. Nested entities are priced once each (memo), and a loop, which
    creation refuses, is cut rather than followed."""
    memo: dict[int, Cost] = {}
    visiting: set[int] = set()

    def over(cost: Cost) -> bool:
        return stop_at is not None and (
            cost.requests > stop_at.requests
            or cost.bytes > stop_at.bytes
            or cost.depth > stop_at.depth
        )

    def price(p: Profile) -> Cost:
        key = id(p)
        if key in memo:
            return memo[key]
        if p.ect == "multicast":  # one NON request to the group
            return Cost(1, member_request_bytes(p.members[0], False, coap), 1)
        visiting.add(key)
        requests = size = 0
        depth = 1
        for member in p.members:
            inner = nested(member)
            if inner is None:
                requests += 1
                size += member_request_bytes(member, p.emt == "con", coap)
            elif id(inner) not in visiting:
                cost = price(inner)
                requests += cost.requests
                size += cost.bytes
                depth = max(depth, cost.depth + 1)
            if over(Cost(requests, size, depth)):
                break
        visiting.discard(key)
        memo[key] = Cost(requests, size, depth)
        return memo[key]

    return price(profile)


def client_of(addr: Hashable, v6_prefix: int) -> str:
    """The client a request's source counts as for per-client limits: an IPv4
    address, or the IPv6 network of `v6_prefix` bits it lies in."""
    host = str(addr[0]) if isinstance(addr, tuple) else str(addr)
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)  # a dual-stack socket's IPv4 client
    if isinstance(address, ipaddress.IPv6Address) and v6_prefix < 128:
        return str(ipaddress.IPv6Network((address, v6_prefix), strict=False))
    return str(address)


def owner_of(addr: Hashable, identity: str | None) -> str:
    """Who owns what a client creates: its authenticated identity (a DTLS PSK
    identity, an OSCORE Sender ID), else the address and port it sent from."""
    if identity is not None:
        return f"identity {identity}"
    if isinstance(addr, tuple) and len(addr) >= 2:
        host = str(addr[0])
        return f"[{host}]:{addr[1]}" if ":" in host else f"{host}:{addr[1]}"
    return str(addr)
