"""The Entity Manager (apps/em): its profile parser (`em-profile`: parse_profile,
update_profile and apply_query, which may raise ProfileError and nothing else) and
the manager itself over a CoAP endpoint (`em-manager`: clients' requests to /e,
/e/<name>, its profile and queries, members answering or not).

The manager is driven through its public interface only (EntityManager(endpoint,
EmParams(...)), receive, handle_timer, next_timer, datagrams_to_send, events)."""

from __future__ import annotations

import json
import math
import random

from fuzz_targets.common import StackCase, canonical, mutate, randbytes, text
from iotbench.apps.em.profile import (
    CT_JSON,
    ECT,
    EMT,
    EO,
    MAX_DELAY_MS,
    Profile,
    ProfileError,
    apply_query,
    parse_member,
    parse_profile,
    update_profile,
)
from iotbench.proto.coap import codec as coap
from iotbench.proto.coap.codec import Code, Message, Opt, Type

MEMBERS = [("fd00::2", 5683), ("fd00::3", 5683), ("fd00::4", 61616), ("10.0.0.5", 5683)]
EM_HOST = "fd00::1"
MAX_MEMBERS = 4


# ---- profiles ----------------------------------------------------------------------------


def member_uri(rng: random.Random) -> object:
    r = rng.random()
    if r < 0.75:
        host, port = rng.choice(MEMBERS)
        host = f"[{host}]" if ":" in host else host
        port_text = rng.choice(("", f":{port}")) if port == 5683 else f":{port}"
        path = rng.choice(("/s/t", "/s/t", "/x", "", "/a%2Fb", "/s/t?q=1", "/e/n1"))
        return f"coap://{host}{port_text}{path}"
    if r < 0.8:
        return f"coap://[{EM_HOST}]/e/{rng.choice(('n1', 'n2', 'e1'))}"  # a nested entity
    if r < 0.9:
        return rng.choice(
            ("coaps://[fd00::2]/s", "http://x/", "coap://", "/s/t", "coap://[fd00::2", "")
        )
    return rng.choice((None, 1, [], {}, True, 2.5))


def _value(rng: random.Random, field: str) -> object:
    r = rng.random()
    if field == "name":
        good = rng.choice(("n1", "n2", "e1", "x" * 32, "a-b_c"))
        return good if r < 0.7 else rng.choice(("", "x" * 33, "a b", 5, None, ["n1"]))
    if field == "er":
        if r < 0.8:
            return [member_uri(rng) for _ in range(rng.randint(1, MAX_MEMBERS + 1))]
        return rng.choice(([], "coap://[fd00::2]/s/t", None, [member_uri(rng)] * 2))
    if field == "emt":
        return rng.choice(EMT) if r < 0.8 else rng.choice(("CON", "", 1, None))
    if field == "ect":
        return rng.choice(ECT) if r < 0.8 else rng.choice(("uni", None, 0))
    if field == "enr":
        return (
            rng.choice((1, 2, 3, 4)) if r < 0.7 else rng.choice((0, -1, 5, 2.0, True, "1", 1 << 70))
        )
    if field == "eo":
        if r < 0.6:
            return rng.sample(EO, rng.randint(1, 4))
        return rng.choice((rng.choice(EO), [], ["avg", "avg"], ["sum"], "nope", [1], None))
    if field == "delay":
        if r < 0.7:
            return rng.choice((0, 1, 100, 2.5, MAX_DELAY_MS))
        return rng.choice((-1, MAX_DELAY_MS + 1, float("nan"), float("inf"), 1e400, True, "5"))
    return rng.choice((1, "x", None, [], {}))


def profile_payload(rng: random.Random, creating: bool = True) -> bytes:
    """A profile document, valid or not in any field, as JSON; sometimes mutated JSON
    text, a non-object, or random bytes."""
    r = rng.random()
    if r < 0.05:
        return randbytes(rng, rng.randrange(30))
    if r < 0.1:
        return rng.choice((b"[]", b"null", b"1", b'"x"', b"{", b"\xff{}", b'{"er": 1e999}'))
    doc = {}
    fields = ["er", "ect", "emt", "enr", "eo", "delay"] + (["name"] if creating else [])
    for field in fields:
        if rng.random() < (0.95 if field == "er" and creating else 0.4):
            doc[field] = _value(rng, field)
    if rng.random() < 0.05:
        doc[rng.choice(("mcstURI", "x", ""))] = 1
    data = json.dumps(doc).encode()
    if rng.random() < 0.2:
        data = mutate(data, rng)
    return data


def query_args(rng: random.Random) -> list[str]:
    args = []
    for _ in range(rng.choice((0, 0, 1, 2, 3))):
        key = rng.choice(("emt", "enr", "eo", "delay", "ect", "x", ""))
        value = rng.choice(
            ("con", "non", "1", "2", "0", "avg", "lst", "max", "nan", "inf", "1e5", "-1", "")
        )
        args.append(rng.choice((f"{key}={value}", key, f"{key}={text(rng, 3)}")))
    return args


def content_format(rng: random.Random) -> int | None:
    r = rng.random()
    return CT_JSON if r < 0.7 else None if r < 0.85 else rng.choice((0, 60, 1 << 16))


def check_profile(profile: Profile, name: str | None = None) -> None:
    """What any accepted profile must be, and that it survives its own JSON."""
    assert 1 <= len(profile.members) <= MAX_MEMBERS
    assert len({m.uri for m in profile.members}) == len(profile.members)
    for m in profile.members:
        assert parse_member(m.uri, 0) == m, f"{m.uri} is not canonical"
    assert profile.emt in EMT and profile.ect in ECT
    assert 1 <= profile.replies_wanted <= len(profile.members)
    assert profile.eo and len(set(profile.eo)) == len(profile.eo) and set(profile.eo) <= set(EO)
    assert isinstance(profile.delay_ms, float) and math.isfinite(profile.delay_ms)
    assert 0 <= profile.delay_ms <= MAX_DELAY_MS
    if profile.ect == "multicast":
        assert profile.emt == "non"
        first = profile.members[0]
        assert all(
            (m.path, m.query, m.port) == (first.path, first.query, first.port)
            for m in profile.members
        )
    if profile.mcst_uri is None:
        again_name, again = parse_profile(profile.to_json(name or "e1"), CT_JSON, MAX_MEMBERS)
        assert again_name == (name or "e1")
        assert again.members == profile.members and again.eo == profile.eo
        assert (again.emt, again.ect, again.delay_ms) == (
            profile.emt,
            profile.ect,
            profile.delay_ms,
        )
        assert again.replies_wanted == profile.replies_wanted


def run_em_profile_case(case: StackCase, count: int, stats: dict) -> None:
    """A profile's life: created from a payload, updated by others, queried with
    URI query arguments; each input is one of the three calls."""
    rng = case.rng
    profile: Profile | None = None
    name = None
    for _ in range(count):
        r = rng.random()
        cf = content_format(rng)
        try:
            if profile is None or r < 0.3:
                payload = case.note(f"create/{cf}", profile_payload(rng))
                name, created = parse_profile(payload, cf, MAX_MEMBERS)
                assert name is None or isinstance(name, str)
                check_profile(created, name)
                profile = created
            elif r < 0.6:
                payload = case.note(f"update/{cf}", profile_payload(rng, creating=False))
                updated = update_profile(profile, payload, cf, MAX_MEMBERS)
                check_profile(updated, name)
                assert updated.ect == profile.ect
                profile = updated
            else:
                args = query_args(rng)
                case.note("query", "&".join(args).encode("utf-8", "surrogatepass"))
                queried = apply_query(profile, args)
                check_profile(queried, name)
                assert queried.members == profile.members
                assert any(a.startswith("eo=") for a in args) or queried.eo == profile.eo
        except ProfileError as exc:
            assert 400 <= _code_number(exc.code) < 500, f"ProfileError with code {exc.code}"
            assert str(exc), "a ProfileError without a message"
        stats["inputs"] += 1


def _code_number(code: int) -> int:
    return (code >> 5) * 100 + (code & 0x1F)


# ---- the manager --------------------------------------------------------------------------

CLIENTS = [("fd00::c1", 40000), ("fd00::c2", 40001)]
_TOKEN = (b"\x01", b"\x02\x03", b"")


def _client_request(rng: random.Random, names: list[str], mid: int) -> bytes:
    """A client's request to the EM, as a CoAP message."""
    name = rng.choice(names) if names and rng.random() < 0.9 else rng.choice(("n1", "e1", "zz"))
    mtype = Type.CON if rng.random() < 0.8 else Type.NON
    token = rng.choice(_TOKEN) + bytes((mid & 0xFF,))
    r = rng.random()
    if r < 0.3:
        msg = Message.request(
            mtype,
            Code.POST,
            mid,
            token,
            "/e",
            profile_payload(rng),
            content_format=content_format(rng),
        )
    elif r < 0.4:
        msg = Message.request(mtype, Code.GET, mid, token, "/e")
    elif r < 0.7:
        msg = Message.request(mtype, Code.GET, mid, token, ["e", name], query=query_args(rng))
        if rng.random() < 0.2:
            msg.add_option(Opt.ACCEPT, rng.choice((0, 110, 50, 1000)))
    elif r < 0.8:
        msg = Message.request(
            mtype,
            Code.PUT,
            mid,
            token,
            ["e", name],
            profile_payload(rng, creating=False),
            content_format=content_format(rng),
        )
    elif r < 0.87:
        msg = Message.request(mtype, Code.DELETE, mid, token, ["e", name])
    elif r < 0.94:
        msg = Message.request(mtype, Code.GET, mid, token, ["e", name, "profile"])
    else:
        code = rng.choice((Code.GET, Code.POST, Code.PUT, Code.DELETE, 5, 7))
        path = rng.choice((["e"], ["e", name, "x"], ["x"], ["e", ""], [".well-known", "core"]))
        msg = Message.request(mtype, code, mid, token, path)
    return coap.encode(msg)


def _member_reply(rng: random.Random, request: Message) -> bytes | None:
    """What a member answers: a value (as text or SenML), an error, an RST, or nothing."""
    r = rng.random()
    if r < 0.15:
        return None
    if r < 0.2:
        return coap.encode(Message.empty(Type.RST, request.message_id))
    mtype = Type.ACK if request.type == Type.CON else Type.NON
    mid = request.message_id if mtype == Type.ACK else rng.randrange(0x10000)
    r = rng.random()
    if r < 0.6:
        value = rng.choice((b"21.5", b"-3", b"1e3", b"nan", b"", b"x", b"9" * 400))
        options = [(Opt.CONTENT_FORMAT, b"")]
        code = Code.CONTENT
    elif r < 0.8:
        value = json.dumps([{"n": "t", "v": rng.choice((1, 2.5, "x"))}]).encode()
        options = [(Opt.CONTENT_FORMAT, (110).to_bytes(1, "big"))]
        code = Code.CONTENT
    else:
        value, options = b"", []
        code = rng.choice((Code.NOT_FOUND, Code.CHANGED, Code.INTERNAL_SERVER_ERROR, 0x7F))
    data = coap.encode(Message(mtype, code, mid, request.token, options, value))
    return mutate(data, rng) if rng.random() < 0.1 else data


def run_em_manager_case(case: StackCase, count: int, stats: dict) -> None:
    """An Entity Manager on a CoAP endpoint, two clients creating, changing, querying
    and deleting entities, members answering its requests (or not, or wrongly); each
    input is one datagram to the EM: a client's request or a member's answer, either
    maybe mutated, or random bytes."""
    from iotbench.apps.em.manager import EmParams, EntityManager
    from iotbench.proto.coap.endpoint import CoapEndpoint
    from iotbench.proto.coap.params import CoapParams

    rng = case.rng
    params = EmParams(
        max_entities=3,
        max_members=MAX_MEMBERS,
        member_timeout_s=rng.choice((None, 2.0)),
        local_hosts=(EM_HOST,),
    )
    endpoint = CoapEndpoint(random.Random(rng.randrange(1 << 30)), CoapParams())
    em = EntityManager(endpoint, params)
    names: list[str] = []
    asked: list[tuple[Message, tuple]] = []  # the EM's requests to members
    sent: list[bytes] = []
    now = 0.0
    mid = rng.randrange(0x10000)

    def drain() -> None:
        for data, addr in em.datagrams_to_send():
            canonical(coap.decode, coap.encode, data)
            # (members are any address a profile names, even a mutated one)
            assert isinstance(addr, tuple) and 0 <= addr[1] < 0x10000, f"a datagram to {addr}"
            msg = coap.decode(data)
            if addr not in CLIENTS:
                if 0 < msg.code < 32:  # a request (class 0)
                    asked.append((msg, addr))
                    del asked[:-8]
            elif msg.code == Code.CREATED:
                for number, value in msg.options:
                    if number == Opt.LOCATION_PATH and value != b"e":
                        names.append(value.decode("utf-8", "replace"))
                        del names[:-6]
        em.events()
        assert endpoint.stats.internal_errors == 0, "internal error in the endpoint"
        entities = getattr(em, "entities", None)
        assert entities is None or len(entities) <= params.max_entities

    for _ in range(count):
        r = rng.random()
        if asked and r < 0.4:
            request, addr = asked.pop(0 if rng.random() < 0.7 else -1)
            data = _member_reply(rng, request)
            if data is None:
                stats["inputs"] += 1
                continue
            if str(addr[0]).startswith("ff"):  # a group request: a member answers itself
                addr = rng.choice(MEMBERS[:3])
            source = addr
        elif r < 0.9:
            mid = (mid + 1) & 0xFFFF
            data = _client_request(rng, names, mid)
            source = rng.choice(CLIENTS)
            if sent and rng.random() < 0.1:
                data = rng.choice(sent)  # a retransmission
            sent = (sent + [data])[-4:]
            if rng.random() < 0.15:
                data = mutate(data, rng)
        else:
            data = randbytes(rng, rng.randrange(40))
            source = rng.choice(CLIENTS + MEMBERS)
        em.receive(now, case.note(f"{source[0]}:{source[1]}", data), source)
        drain()
        now += rng.choice((0.0, 0.0, 0.01, 0.2, 1.0, 3.0, 30.0))
        t = em.next_timer()
        if t is not None and t <= now:
            em.handle_timer(now)
            t = em.next_timer()
            assert t is None or t > now, f"a timer at {t} stays due at {now}"
        drain()
        stats["inputs"] += 1


STACKS = {"em-profile": run_em_profile_case, "em-manager": run_em_manager_case}
