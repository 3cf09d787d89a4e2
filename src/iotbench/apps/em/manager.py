"""The Entity Manager: a sans-I/O CoAP server whose resources are groups of resources.

    em = EntityManager(CoapEndpoint(rng, params), EmParams())
    em.receive(now, data, addr); em.handle_timer(now)      # like a CoapEndpoint
    em.datagrams_to_send(); em.next_timer(); em.events()

It serves, on its endpoint (docs/coap-em.md has the whole resource model):

- POST /e with a profile (profile.py): create an entity, 2.01 Created with
  Location-Path e/<name> and the stored profile. A multicast entity first
  gets a group address (groups.py) and every member is asked to join it
  (POST /mc?act=add, unicast CON); 2.01 only when all joined.
- GET /e: the entities, in link format.
- GET /e/<name>[?emt=&enr=&eo=&delay=]: query the members and answer with
  their combined replies (aggregate.py): unicast, one request per member,
  `delay` ms apart, until `enr` answered or every request ended; multicast,
  one NON request to the group, replies collected until the leisure and a
  margin have passed or `enr` answered.
- PUT /e/<name>: change the profile; DELETE /e/<name>: remove the entity
  (members of a multicast entity are asked to leave).
- GET /e/<name>/profile: the stored profile, with mcstURI for multicast.

The EM answers its client when it has the replies: as a deferred response
of its endpoint (an empty ACK first when that takes longer than
CoapParams.separate_response_after_s). A member that is itself an entity
of this EM (its host in EmParams.local_hosts) is queried without the
network, and entities may not contain themselves.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace

from iotbench.apps.em.aggregate import (
    CT_SENML_JSON,
    CT_TEXT,
    REPLY_FORMATS,
    Outcome,
    combine,
    failed,
    member_reply,
    timed_out,
)
from iotbench.apps.em.groups import DEFAULT_POOL_SIZE, GroupPool, PoolExhausted
from iotbench.apps.em.profile import (
    CT_JSON,
    Member,
    Profile,
    ProfileError,
    apply_query,
    parse_profile,
    update_profile,
)
from iotbench.apps.em.safeguards import Cost, client_of, owner_of, query_cost
from iotbench.proto.coap.codec import Code, Message
from iotbench.proto.coap.endpoint import (
    CoapEndpoint,
    Deferred,
    GroupRequestDone,
    GroupResponse,
    RequestFailed,
    ResourceResponse,
    ResponseReceived,
)
from iotbench.proto.coap.events import CoapEvent
from iotbench.proto.coap.options import Opt
from iotbench.proto.coap.resources import CT_LINK_FORMAT
from iotbench.proto.coap.uri import compose_coap_uri
from iotbench.proto.timers import OBJ, TimerQueue
from iotbench.proto.timers import cancel as cancel_timer

COLLECTION = "/e"
_CALL = 0  # the EM's one kind of timer: call (callback, args)
MC_PATH = "mc"


@dataclass(frozen=True)
class EmParams:
    """Limits and timing of an Entity Manager.

    max_entities / max_members: what one EM holds (beyond them, a profile is
    refused with 5.03 and 4.00). pool_size: multicast addresses ff1e::89:1..n.
    multicast_margin_s: how long after the leisure a multicast query waits
    for replies still on their way. local_hosts: addresses (as in a URI) that
    name this EM, so that its own entities can be members without the
    network. multicast_unavailable: why this EM cannot serve multicast
    entities (e.g. an IPv4 socket); creating one is then refused with 5.01.
    member_timeout_s: the longest a query (or a join) waits for members,
    after which those still silent are "no response"; None: CoAP's own
    give-up (MAX_TRANSMIT_WAIT, 93 s, for CON; the NON timeout for NON).

    port: the EM's own CoAP port: a member at one of local_hosts on this
    port is one of this EM's entities.

    What keeps a reachable EM from being a reflector (`iotbench serve
    coap-em` sets them, real.coap_em.REAL_MODE_PARAMS; None: no limit, as
    in the simulator, whose clients are the scenario's; safeguards.py says
    why each exists):
    allowed_members: the networks (CIDR, e.g. "fd00::/64") member addresses
    must lie in; a profile naming another is refused with 4.03 (this EM's
    own entities are always allowed). max_entities_per_client,
    max_queries_per_client: entities one client may have created, and
    queries it may have in progress at once; beyond them 5.03 with Max-Age
    (retry_after_s, or for entities a minute). A client is an IPv4 address
    or the IPv6 network of client_prefix_v6 bits. max_queries: queries in
    progress from all clients together (5.03 beyond). max_requests_per_query,
    max_bytes_per_query, max_nesting_depth: what one client query may make
    the EM send, across every level of nested entities (safeguards.Cost); a
    query, or a profile, over one of them is refused with 4.03.
    shared_entities: any client may change or delete any entity; False: only
    the client that created it (its identity, else its address and port).
    """

    max_entities: int = 64
    max_members: int = 64
    pool_size: int = DEFAULT_POOL_SIZE
    multicast_margin_s: float = 1.0
    local_hosts: tuple[str, ...] = ()
    multicast_unavailable: str | None = None
    member_timeout_s: float | None = None
    allowed_members: tuple[str, ...] | None = None
    max_entities_per_client: int | None = None
    max_queries_per_client: int | None = None
    retry_after_s: int = 5
    #: Identities (a DTLS PSK identity, an OSCORE Sender ID in hex) that may
    #: create entities; None: any client. A client the security layer has not
    #: authenticated gets 4.01, one not named 4.03.
    allowed_creators: tuple[str, ...] | None = None
    port: int = 5683
    max_queries: int | None = None
    max_requests_per_query: int | None = None
    max_bytes_per_query: int | None = None
    max_nesting_depth: int | None = None
    client_prefix_v6: int = 128
    shared_entities: bool = False

    def __post_init__(self) -> None:
        if self.allowed_members is not None:
            for prefix in self.allowed_members:
                try:
                    ipaddress.ip_network(prefix, strict=False)
                except ValueError:
                    raise ValueError(
                        f"EmParams.allowed_members: {prefix!r} is not a network such as "
                        "fd00::/64 or 192.168.1.0/24"
                    ) from None
        if self.max_entities < 1 or self.max_members < 1:
            raise ValueError("EmParams.max_entities and max_members must be >= 1")
        if not self.multicast_margin_s >= 0:
            raise ValueError("EmParams.multicast_margin_s must be >= 0")
        if self.member_timeout_s is not None and not self.member_timeout_s > 0:
            raise ValueError("EmParams.member_timeout_s must be > 0")
        for key in (
            "max_entities_per_client",
            "max_queries_per_client",
            "max_queries",
            "max_requests_per_query",
            "max_bytes_per_query",
            "max_nesting_depth",
        ):
            value = getattr(self, key)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ValueError(f"EmParams.{key} must be None (no limit) or >= 1, not {value!r}")
        if not 0 <= self.client_prefix_v6 <= 128:
            raise ValueError("EmParams.client_prefix_v6 must be 0 to 128 bits")
        if not 0 < self.port < 65536:
            raise ValueError("EmParams.port must be 1 to 65535")


@dataclass(frozen=True, slots=True)
class QueryAnswered:
    """The EM answered a query of entity `name`: how many members gave a value, and
    when the last member's reply came (None: none replied)."""

    name: str
    code: int
    started: float
    answered: float
    members: int
    values: int
    last_reply: float | None = None


@dataclass(slots=True)
class Entity:
    name: str
    profile: Profile
    group: str | None = None  # the multicast address


@dataclass(eq=False, slots=True)
class _Work:
    """Requests to members in progress, and what to do when they are over."""

    members: tuple[Member, ...]
    on_done: Callable[[float, dict[str, Outcome]], None]
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    pending: dict[int, Member] = field(default_factory=dict)  # request id -> member
    wanted: int = 0  # successes that end the work early (0: all members)
    group: bool = False  # one request to a multicast group
    finished: bool = False
    timers: list = field(default_factory=list)
    children: list[_Work] = field(default_factory=list)  # nested entities' queries
    last_reply: float | None = None  # when a member's reply last came


class EntityManager:
    def __init__(
        self,
        endpoint: CoapEndpoint,
        params: EmParams = EmParams(),  # noqa: B008
        identity_of: Callable[[Hashable], str | None] | None = None,
    ) -> None:
        """`identity_of(addr)`: who a client proved to be (its security layer's
        peer_identity), for EmParams.allowed_creators."""
        self.endpoint = endpoint
        self.params = params
        self.identity_of = identity_of
        self.entities: dict[str, Entity] = {}
        self.pool = GroupPool(params.pool_size)
        self._events: list[QueryAnswered] = []
        self._timers = TimerQueue()  # entries' objects: (callback, args)
        self._by_request: dict[int, _Work] = {}
        self._creators: dict[str, str] = {}  # entity name -> the client that created it
        self._owners: dict[str, str] = {}  # entity name -> who may change it (owner_of)
        self._queries_of: dict[str, int] = {}  # client -> its queries in progress
        self._next_name = 1
        self._now = 0.0  # the time of the call being handled (handlers get no clock)
        endpoint.add_resource(COLLECTION, self._on_collection, content_format=CT_LINK_FORMAT)

    # =================================================================== driving

    def receive(self, now: float, data: bytes, addr: Hashable) -> None:
        self._now = now
        self.endpoint.receive(now, data, addr)
        self._drain(now)

    def datagrams_to_send(self, now: float | None = None) -> list[tuple[bytes, Hashable]]:
        return self.endpoint.datagrams_to_send(now)

    def events(self) -> list[QueryAnswered]:
        events, self._events = self._events, []
        return events

    def next_timer(self) -> float | None:
        own = self._timers.next_deadline()
        inner = self.endpoint.next_timer()
        if own is None or inner is None:
            return own if inner is None else inner
        return min(own, inner)

    def handle_timer(self, now: float) -> None:
        self._now = now
        inner = self.endpoint.next_timer()
        if inner is not None and inner <= now:
            self.endpoint.handle_timer(now)
        while (entry := self._timers.pop_due(now)) is not None:
            callback, args = entry[OBJ]
            callback(now, *args)
        self._drain(now)

    def peer_unreachable(self, now: float, addr: Hashable) -> None:
        """The network says `addr` (a member or a group) cannot be reached: what
        waits for it fails at once (CoapEndpoint.peer_unreachable)."""
        self._now = now
        self.endpoint.peer_unreachable(now, addr)
        self._drain(now)

    def _at(self, when: float, callback: Callable, *args: object) -> list:
        return self._timers.arm(when, _CALL, (callback, args))

    def _drain(self, now: float) -> None:
        """Hand the endpoint's client events to the work they belong to."""
        while True:
            events = self.endpoint.events()
            if not events:
                return
            for event in events:
                work = self._by_request.get(getattr(event, "request_id", -1))
                if work is not None:
                    self._on_member_event(now, work, event)

    # =================================================================== resources

    def _on_collection(self, request: Message, addr: Hashable):
        now = self._now
        if request.code == Code.GET:
            links = ",".join(
                f'<{COLLECTION}/{name}>;ect="{e.profile.ect}"' for name, e in self.entities.items()
            )
            return ResourceResponse(Code.CONTENT, links.encode(), CT_LINK_FORMAT)
        if request.code != Code.POST:
            return _error(
                Code.METHOD_NOT_ALLOWED, "POST a profile to create an entity, GET lists them"
            )
        try:
            name, profile = parse_profile(
                request.payload, request.content_format, self.params.max_members
            )
        except ProfileError as exc:
            return _error(exc.code, str(exc))
        refused = self._refused(addr, profile)
        if refused is not None:
            return refused
        if name is None:
            name = self._free_name()
        elif name in self.entities:
            return _error(Code.CONFLICT, f"an entity named {name!r} exists; PUT to change it")
        if len(self.entities) >= self.params.max_entities:
            return _error(
                Code.SERVICE_UNAVAILABLE,
                f"this EM holds at most {self.params.max_entities} entities",
            )
        loop = self._nesting_loop(name, profile)
        if loop:
            return _error(Code.BAD_REQUEST, loop)
        costly = self._too_costly(profile, "an entity with this profile")
        if costly is not None:
            return costly
        self._creators[name] = self._client(addr)
        self._owners[name] = self._owner(addr)
        if profile.ect == "unicast":
            self._store(Entity(name, profile))
            return _created(name, profile)
        return self._create_multicast(now, request, addr, name, profile)

    def _on_entity(self, request: Message, addr: Hashable):
        name = request.uri_path.split("/")[2]
        entity = self.entities.get(name)
        if entity is None:
            return _error(Code.NOT_FOUND, f"no entity named {name!r}")
        if request.code == Code.GET:
            return self._query(self._now, request, addr, entity)
        not_owner = self._not_owner(addr, name)
        if not_owner is not None:
            return not_owner
        if request.code == Code.PUT:
            try:
                profile = update_profile(
                    entity.profile, request.payload, request.content_format, self.params.max_members
                )
            except ProfileError as exc:
                return _error(exc.code, str(exc))
            outside = self._outside_members(profile)
            if outside is not None:
                return outside
            loop = self._nesting_loop(name, profile)
            if loop:
                return _error(Code.BAD_REQUEST, loop)
            costly = self._too_costly(profile, f"entity {name!r} with this profile")
            if costly is not None:
                return costly
            entity.profile = profile
            return ResourceResponse(Code.CHANGED, profile.to_json(name), CT_JSON)
        return self._delete(self._now, request, addr, entity)

    def _on_profile(self, request: Message, addr: Hashable):
        name = request.uri_path.split("/")[2]
        entity = self.entities.get(name)
        if entity is None:
            return _error(Code.NOT_FOUND, f"no entity named {name!r}")
        return ResourceResponse(Code.CONTENT, entity.profile.to_json(name), CT_JSON)

    def _store(self, entity: Entity) -> None:
        self.entities[entity.name] = entity
        base = f"{COLLECTION}/{entity.name}"
        self.endpoint.add_resource(base, self._on_entity, methods={Code.GET, Code.PUT, Code.DELETE})
        self.endpoint.add_resource(
            f"{base}/profile", self._on_profile, methods={Code.GET}, content_format=CT_JSON
        )

    def _forget(self, entity: Entity) -> None:
        self.entities.pop(entity.name, None)
        self._creators.pop(entity.name, None)
        self._owners.pop(entity.name, None)
        base = f"{COLLECTION}/{entity.name}"
        self.endpoint.remove_resource(base)
        self.endpoint.remove_resource(f"{base}/profile")
        if entity.group is not None:
            self.pool.release(entity.group)

    def _free_name(self) -> str:
        while f"e{self._next_name}" in self.entities:
            self._next_name += 1
        name = f"e{self._next_name}"
        self._next_name += 1
        return name

    # =================================================================== queries

    def _query(self, now: float, request: Message, addr: Hashable, entity: Entity):
        try:
            profile = apply_query(entity.profile, request.uri_query)
        except ProfileError as exc:
            return _error(exc.code, str(exc))
        accept = request.get_option(Opt.ACCEPT)
        fmt = CT_TEXT if accept is None else int.from_bytes(accept, "big")
        if fmt not in REPLY_FORMATS:
            return _error(
                Code.NOT_ACCEPTABLE,
                f"answers are text/plain ({CT_TEXT}) or SenML+JSON ({CT_SENML_JSON})",
            )
        costly = self._too_costly(profile, f"a query of {entity.name!r}")
        if costly is not None:
            return costly
        client = self._client(addr)
        limit = self.params.max_queries_per_client
        if limit is not None and self._queries_of.get(client, 0) >= limit:
            return _busy(
                f"{client} has {limit} queries in progress, the most one client may",
                self.params.retry_after_s,
            )
        limit = self.params.max_queries
        if limit is not None and sum(self._queries_of.values()) >= limit:
            return _busy(
                f"this EM has {limit} queries in progress, the most it takes",
                self.params.retry_after_s,
            )
        self._queries_of[client] = self._queries_of.get(client, 0) + 1

        def answered(t: float, rr: ResourceResponse, reply=None) -> None:
            self._queries_of[client] -= 1
            if not self._queries_of[client]:
                del self._queries_of[client]
            reply(t, rr)

        return self._later(
            lambda reply: self._run_query(
                now, entity, profile, fmt, lambda t, rr: answered(t, rr, reply)
            )
        )

    # =================================================================== safeguards

    def _refused(self, addr: Hashable, profile: Profile) -> ResourceResponse | None:
        """Why a client may not create this entity (members outside the allowed
        networks, or its entities at their limit, or a client not allowed to create
        any), or None."""
        unauthorized = self._not_a_creator(addr)
        if unauthorized is not None:
            return unauthorized
        outside = self._outside_members(profile)
        if outside is not None:
            return outside
        limit = self.params.max_entities_per_client
        client = self._client(addr)
        if limit is not None and sum(1 for c in self._creators.values() if c == client) >= limit:
            return _busy(
                f"{client} has created {limit} entities, the most one client may; delete one",
                60,
            )
        return None

    def _client(self, addr: Hashable) -> str:
        return client_of(addr, self.params.client_prefix_v6)

    def _owner(self, addr: Hashable) -> str:
        return owner_of(addr, self.identity_of(addr) if self.identity_of is not None else None)

    def _not_owner(self, addr: Hashable, name: str) -> ResourceResponse | None:
        """Why this client may not change or delete entity `name`, or None."""
        if self.params.shared_entities:
            return None
        owner = self._owners.get(name)
        if owner is None or owner == self._owner(addr):
            return None
        return _error(
            Code.FORBIDDEN,
            f"entity {name!r} belongs to the client that created it ({owner}); "
            "others may query it, not change or delete it",
        )

    def _too_costly(self, profile: Profile, what: str) -> ResourceResponse | None:
        """Why querying `profile` (what: how the message names it) would cost more
        than one client query may (EmParams.max_*_per_query, max_nesting_depth),
        or None."""
        p = self.params
        bounds = (p.max_requests_per_query, p.max_bytes_per_query, p.max_nesting_depth)
        if bounds == (None, None, None):
            return None
        unbounded = 1 << 62
        limit = Cost(
            p.max_requests_per_query or unbounded,
            p.max_bytes_per_query or unbounded,
            p.max_nesting_depth or unbounded,
        )

        def nested(member: Member) -> Profile | None:
            entity = self._local_entity(member)
            return None if entity is None else entity.profile

        cost = query_cost(profile, nested, self.endpoint.params, stop_at=limit)
        if cost.requests > limit.requests:
            excess = f"more than {limit.requests:,} requests to members"
        elif cost.bytes > limit.bytes:
            excess = f"more than {limit.bytes:,} bytes of requests (with retransmissions)"
        elif cost.depth > limit.depth:
            excess = f"more than {limit.depth} levels of nested entities"
        else:
            return None
        return _error(
            Code.FORBIDDEN,
            f"{what} would take {excess}; one query may take at most "
            f"{_limit(p.max_requests_per_query)} requests, {_limit(p.max_bytes_per_query)} "
            f"bytes and {_limit(p.max_nesting_depth)} levels",
        )

    def is_member_address(self, addr: Hashable) -> bool:
        """Whether `addr` (host, port) is a member of an entity: a DTLS layer
        under the EM asks members in the clear (they are plain CoAP servers)."""
        if not isinstance(addr, tuple):
            return False  # not a (host, port), so no member's
        host, port = addr[0], addr[1]
        return any(
            member.host == host and member.port == port
            for entity in self.entities.values()
            for member in entity.profile.members
        )

    def _not_a_creator(self, addr: Hashable) -> ResourceResponse | None:
        allowed = self.params.allowed_creators
        if allowed is None:
            return None
        identity = self.identity_of(addr) if self.identity_of is not None else None
        if identity is None:
            return _error(
                Code.UNAUTHORIZED,
                "creating entities needs an authenticated client (DTLS or OSCORE)",
            )
        if identity not in allowed:
            return _error(Code.FORBIDDEN, f"{identity!r} may not create entities here")
        return None

    def _outside_members(self, profile: Profile) -> ResourceResponse | None:
        allowed = self.params.allowed_members
        if allowed is None:
            return None
        networks = [ipaddress.ip_network(p, strict=False) for p in allowed]
        for member in profile.members:
            if member.host in self.params.local_hosts:
                continue  # this EM's own entity
            try:
                address = ipaddress.ip_address(member.host)
            except ValueError:
                address = None
            if address is None or not any(address in n for n in networks):
                return _error(
                    Code.FORBIDDEN,
                    f"member {member.uri} is outside the networks this EM may ask "
                    f"({', '.join(allowed)}); start it with --allow-members",
                )
        return None

    def _run_query(
        self,
        now: float,
        entity: Entity,
        profile: Profile,
        fmt: int,
        reply: Callable[[float, ResourceResponse], None],
    ) -> _Work:
        """Query the members of `entity` as `profile` says; `reply` gets the answer."""
        started = now

        def done(t: float, outcomes: dict[str, Outcome]) -> None:
            order = [outcomes[m.uri] for m in profile.members if m.uri in outcomes]
            answer = combine(profile.operation, order, fmt)
            values = sum(1 for o in order if o.ok)
            self._events.append(
                QueryAnswered(
                    entity.name, answer.code, started, t, len(order), values, work.last_reply
                )
            )
            reply(t, ResourceResponse(answer.code, answer.payload, answer.content_format))

        work = _Work(profile.members, done, wanted=profile.replies_wanted)
        self._time_limit(now, work)
        if profile.ect == "multicast":
            self._multicast_query(now, work, entity, profile)
        else:
            self._unicast_member(now, work, profile, 0)
        return work

    def _unicast_member(self, now: float, work: _Work, profile: Profile, index: int) -> None:
        if work.finished:
            return
        member = profile.members[index]
        local = self._local_entity(member)
        if local is not None:
            self._nested_query(now, work, member, local, profile)
        else:
            rid = self.endpoint.request(
                now,
                (member.host, member.port),
                Code.GET,
                list(member.path),
                confirmable=profile.emt == "con",
                query=list(member.query),
            )
            work.pending[rid] = member
            self._by_request[rid] = work
        if index + 1 < len(profile.members):
            work.timers.append(
                self._at(
                    now + profile.delay_ms / 1000, self._unicast_member, work, profile, index + 1
                )
            )

    def _nested_query(
        self, now: float, work: _Work, member: Member, entity: Entity, outer: Profile
    ) -> None:
        def reply(t: float, rr: ResourceResponse) -> None:
            self._member_done(
                t, work, member, member_reply(member.uri, rr.code, rr.payload, rr.content_format)
            )

        work.children.append(self._run_query(now, entity, entity.profile, CT_SENML_JSON, reply))

    def _multicast_query(self, now: float, work: _Work, entity: Entity, profile: Profile) -> None:
        first = profile.members[0]
        rid = self.endpoint.request(
            now,
            (entity.group, first.port),
            Code.GET,
            list(first.path),
            confirmable=False,
            query=list(first.query),
            multicast=True,
            wait_s=self._leisure_s() + self.params.multicast_margin_s,
        )
        work.pending[rid] = first
        work.group = True
        self._by_request[rid] = work

    def _leisure_s(self) -> float:
        return self.endpoint.params.default_leisure_s

    def _on_member_event(self, now: float, work: _Work, event: CoapEvent) -> None:
        rid = event.request_id
        if isinstance(event, GroupResponse):
            member = self._member_at(work.members, event.source)
            if member is not None and member.uri not in work.outcomes:
                msg = event.response
                self._member_done(
                    now,
                    work,
                    member,
                    member_reply(member.uri, msg.code, msg.payload, msg.content_format),
                )
            return
        member = work.pending.pop(rid, None)
        self._by_request.pop(rid, None)
        if work.group and isinstance(event, RequestFailed):
            for m in work.members:  # the one group request failed: every member with it
                if m.uri not in work.outcomes:
                    work.outcomes[m.uri] = failed(m.uri, f"the group request {_FAILURES_GROUP}")
            self._finish(now, work)
            return
        if isinstance(event, GroupRequestDone):
            for m in work.members:
                if m.uri not in work.outcomes:
                    work.outcomes[m.uri] = timed_out(m.uri)
            self._finish(now, work)
            return
        if member is None:
            return
        if isinstance(event, ResponseReceived):
            msg = event.response
            outcome = member_reply(member.uri, msg.code, msg.payload, msg.content_format)
        elif isinstance(event, RequestFailed):
            reason = _FAILURES.get(event.reason)
            outcome = timed_out(member.uri) if reason is None else failed(member.uri, reason)
            self._member_done(now, work, member, outcome, replied=False)
            return
        else:
            return
        self._member_done(now, work, member, outcome)

    def _member_done(
        self, now: float, work: _Work, member: Member, outcome: Outcome, replied: bool = True
    ) -> None:
        """A member's request ended: with its reply (`replied`), or without one."""
        if work.finished:
            return
        work.outcomes[member.uri] = outcome
        if replied:
            work.last_reply = now
        successes = sum(1 for o in work.outcomes.values() if o.ok)
        if (work.wanted and successes >= work.wanted) or len(work.outcomes) == len(work.members):
            self._finish(now, work)

    def _time_limit(self, now: float, work: _Work) -> None:
        limit = self.params.member_timeout_s
        if limit is not None:
            work.timers.append(self._at(now + limit, self._out_of_time, work))

    def _out_of_time(self, now: float, work: _Work) -> None:
        for m in work.members:
            if m.uri not in work.outcomes:
                work.outcomes[m.uri] = timed_out(m.uri)
        self._finish(now, work)

    def _finish(self, now: float, work: _Work) -> None:
        if work.finished:
            return
        self._stop(now, work)
        work.on_done(now, work.outcomes)

    def _stop(self, now: float, work: _Work) -> None:
        """End the work's timers and requests, and the nested queries it started that
        are still going (their answer could no longer be used), without answering."""
        work.finished = True
        for entry in work.timers:
            cancel_timer(entry)
        for rid in list(work.pending):
            self.endpoint.cancel(now, rid)
            self._by_request.pop(rid, None)
        work.pending.clear()
        for child in work.children:
            if not child.finished:
                self._stop(now, child)

    @staticmethod
    def _member_at(members: tuple[Member, ...], source: object) -> Member | None:
        host: object = source[0] if isinstance(source, tuple) else source
        if not isinstance(host, (str, int, bytes)):
            host = str(host)  # what ip_address() does with any other object
        try:
            wanted = ipaddress.ip_address(host)
        except ValueError:
            return None
        for m in members:
            try:
                if ipaddress.ip_address(m.host) == wanted:
                    return m
            except ValueError:
                continue
        return None

    def _local_entity(self, member: Member) -> Entity | None:
        name = self._names_own_entity(member)
        return None if name is None else self.entities.get(name)

    def _names_own_entity(self, member: Member) -> str | None:
        """The name of the entity of this EM that `member` is, or None (a resource
        elsewhere, another server on this host included)."""
        if member.host not in self.params.local_hosts or member.port != self.params.port:
            return None
        if len(member.path) != 2 or member.path[0] != COLLECTION.strip("/"):
            return None
        return member.path[1]

    def _nesting_loop(self, name: str, profile: Profile) -> str | None:
        """Why `profile` would make entity `name` contain itself, or None."""
        seen: set[str] = set()
        stack = [(m, [name]) for m in profile.members]
        while stack:
            member, trail = stack.pop()
            inner = self._names_own_entity(member)
            if inner is None:
                continue
            if inner == name:
                return f"entity {name!r} would contain itself: {' -> '.join([*trail, inner])}"
            entity = self.entities.get(inner)
            if entity is None or inner in seen:
                continue
            seen.add(inner)
            stack.extend((m, [*trail, inner]) for m in entity.profile.members)
        return None

    def _later(
        self, start: Callable[[Callable[[float, ResourceResponse], None]], object]
    ) -> ResourceResponse | Deferred:
        """A handler's result for work that answers through `reply`: the answer
        itself if `start` gave it at once, else a Deferred answered later."""
        deferred = Deferred()
        early: list[ResourceResponse] = []

        def reply(t: float, rr: ResourceResponse) -> None:
            if deferred.request is None:  # the endpoint has not taken it yet
                early.append(rr)
            else:
                self.endpoint.respond(t, deferred, rr)

        start(reply)
        return early[0] if early else deferred

    # =================================================================== multicast groups

    def _create_multicast(
        self, now: float, request: Message, addr: Hashable, name: str, profile: Profile
    ):
        if self.params.multicast_unavailable is not None:
            return _error(Code.NOT_IMPLEMENTED, self.params.multicast_unavailable)
        try:
            group = self.pool.allocate()
        except PoolExhausted as exc:
            return _error(Code.SERVICE_UNAVAILABLE, str(exc))
        first = profile.members[0]
        port = f":{first.port}" if first.port != 5683 else ""
        query = "?" + "&".join(first.query) if first.query else ""
        mcst = f"coap://[{group}]{port}/" + "/".join(first.path) + query
        profile = replace(profile, mcst_uri=mcst)
        return self._later(lambda reply: self._join_all(now, name, profile, group, reply))

    def _join_all(
        self,
        now: float,
        name: str,
        profile: Profile,
        group: str,
        reply: Callable[[float, ResourceResponse], None],
    ) -> None:
        def joined(t: float, outcomes: dict[str, Outcome]) -> None:
            failures = [o for o in outcomes.values() if not o.ok]
            if not failures:
                self._store(Entity(name, profile, group))
                reply(t, _created(name, profile))
                return
            # All or nothing: those that joined leave again.
            ok = [m for m in profile.members if outcomes.get(m.uri, failed(m.uri, "")).ok]
            self._membership(t, ok, group, "del", lambda t2, o: None)
            self.pool.release(group)
            lines = [f"{f.member} error: {f.error}" for f in failures]
            code = Code.GATEWAY_TIMEOUT if all(f.timed_out for f in failures) else Code.BAD_GATEWAY
            text = f"not every member joined {group}; none is in the group now\n" + "\n".join(lines)
            reply(t, ResourceResponse(code, text.encode(), CT_TEXT))

        self._membership(now, list(profile.members), group, "add", joined)

    def _membership(
        self,
        now: float,
        members: list[Member],
        group: str,
        act: str,
        on_done: Callable[[float, dict[str, Outcome]], None],
    ) -> None:
        """Ask every member to join or leave `group` (POST /mc?act=..., unicast CON)."""
        work = _Work(tuple(members), on_done)
        if not members:
            on_done(now, {})
            return
        self._time_limit(now, work)
        payload = ipaddress.IPv6Address(group).packed
        for m in members:
            rid = self.endpoint.request(
                now, (m.host, m.port), Code.POST, [MC_PATH], payload=payload, query=[f"act={act}"]
            )
            work.pending[rid] = m
            self._by_request[rid] = work

    def _delete(self, now: float, request: Message, addr: Hashable, entity: Entity):
        if entity.group is None:
            self._forget(entity)
            return ResourceResponse(Code.DELETED)
        group = entity.group
        members = list(entity.profile.members)
        self._forget(entity)

        def leave(reply: Callable[[float, ResourceResponse], None]) -> None:
            def left(t: float, outcomes: dict[str, Outcome]) -> None:
                failures = [o for o in outcomes.values() if not o.ok]
                text = "\n".join(
                    f"{f.member} error: {f.error} (still in {group})" for f in failures
                )
                reply(t, ResourceResponse(Code.DELETED, text.encode(), CT_TEXT if text else None))

            self._membership(now, members, group, "del", left)

        return self._later(leave)


_FAILURES_GROUP = "could not be sent (the network is unreachable: no multicast route there)"
_FAILURES = {
    "reset": "reset (the member rejected the request)",
    "unreachable": "unreachable (no route to it, or nothing listens on its port)",
}


def _limit(value: int | None) -> str:
    return "any number of" if value is None else f"{value:,}"


def _busy(message: str, retry_after_s: int) -> ResourceResponse:
    """5.03 Service Unavailable, with Max-Age: when to try again (RFC 7252 5.9.3.4)."""
    return ResourceResponse(
        Code.SERVICE_UNAVAILABLE,
        message.encode("utf-8"),
        CT_TEXT,
        options=((Opt.MAX_AGE, retry_after_s.to_bytes(4, "big").lstrip(b"\0")),),
    )


def _error(code: int, message: str) -> ResourceResponse:
    """A diagnostic payload (RFC 7252 5.5.2): what is wrong, as text."""
    return ResourceResponse(code, message.encode("utf-8"), CT_TEXT)


def _created(name: str, profile: Profile) -> ResourceResponse:
    return ResourceResponse(
        Code.CREATED,
        profile.to_json(name),
        CT_JSON,
        options=[(Opt.LOCATION_PATH, COLLECTION.strip("/")), (Opt.LOCATION_PATH, name)],
    )


def member_uri(host: str, port: int, path: list[str]) -> str:
    return compose_coap_uri(host, port, path)
