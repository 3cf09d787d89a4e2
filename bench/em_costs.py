"""CPU time per message of the Entity Manager on its host (S6), measured here.

    python bench/em_costs.py [--members 10] [--queries 400] [--repeat 5]

S6's Entity Manager ran on a Linux host behind the gateway's border router
(docs/studies/s6.md). The study publishes neither its code nor its host, so the
EM is iotbench's own (apps/em: the same resource model, profiles and
aggregation, with its CoAP endpoint), the one `iotbench serve coap-em` runs on
real sockets. This script measures what it costs per CoAP message: a client's
query for an entity of `--members` members comes in, the EM sends a CON GET to
each member, each member's piggybacked 2.05 comes back, and the EM answers the
client (the study's unicast entity, emt con, delay 0): 2 G + 4 messages per
query (the query, the empty ACK that says its answer will come separately,
the answer, and the client's ACK of it, with each member's request and
reply), all of them encoded or decoded and handled by the EM. The members and
the client are driven by hand-made bytes outside the timed calls, so that only
the EM's work is counted (time.process_time, over every call into it).

It prints the mean over `--repeat` runs of the time per message, which the
`em-host` device profile (proto/ndn/profiles.py) takes as its `coap_message`
cost. The host's speed is this machine's (the study names no CPU; docs/studies/s6.md).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

from iotbench.apps.em.manager import EmParams, EntityManager
from iotbench.proto.coap.codec import Code, Message, Type, decode, encode
from iotbench.proto.coap.endpoint import CoapEndpoint
from iotbench.proto.coap.options import Opt

CLIENT = ("fd01::2", 5683)


def member_address(i: int) -> tuple[str, int]:
    return (f"fd00::{i + 2:x}", 5683)


def settle(em: EntityManager, now: float) -> list[tuple[bytes, object]]:
    """What the EM sends at `now`, its timers due by then run (with delay 0 it asks
    the members from a timer at the query's own time)."""
    sent = em.datagrams_to_send()
    while (due := em.next_timer()) is not None and due <= now:
        em.handle_timer(now)
        sent += em.datagrams_to_send()
    return sent


def measure(members: int, queries: int, seed: int) -> tuple[float, int]:
    """(CPU seconds spent in the EM, messages it handled) over `queries` queries."""
    em = EntityManager(CoapEndpoint(random.Random(seed)), EmParams())
    profile = {"name": "g", "er": [f"coap://[{member_address(i)[0]}]/s/t" for i in range(members)]}
    create = Message.request(
        Type.CON, Code.POST, 1, b"c", "/e", payload=json.dumps(profile).encode()
    )
    create.add_option(Opt.CONTENT_FORMAT, 50)
    em.receive(0.0, encode(create), CLIENT)
    em.datagrams_to_send()
    spent, handled, now = 0.0, 0, 1.0
    for q in range(queries):
        query = Message.request(Type.CON, Code.GET, (q + 2) & 0xFFFF, b"q%d" % q, "/e/g")
        start = time.process_time()
        em.receive(now, encode(query), CLIENT)
        sent = settle(em, now)
        spent += time.process_time() - start
        requests = [(data, addr) for data, addr in sent if addr != CLIENT]
        replies = []
        for data, addr in requests:
            request = decode(data)
            reply = Message(
                Type.ACK, Code.CONTENT, request.message_id, request.token, payload=b"21.5"
            )
            replies.append((encode(reply), addr))
        start = time.process_time()
        for data, addr in replies:
            em.receive(now + 0.01, data, addr)
        answer = settle(em, now + 0.01)
        # The client acknowledges the answer (a CON separate response), or the
        # EM would send it again.
        acks = [
            encode(Message(Type.ACK, Code.EMPTY, decode(data).message_id)) for data, _ in answer
        ]
        for ack in acks:
            em.receive(now + 0.02, ack, CLIENT)
        spent += time.process_time() - start
        # In: the query and the replies; out: the requests, the answer and the
        # empty ACK that told the client its answer would come separately.
        handled += 1 + len(sent) + len(replies) + len(answer) + len(acks)
        assert len(requests) == members and answer, "the EM did not query every member"
        if q == 0:
            print(f"one query: {1 + len(sent) + len(replies) + len(answer) + len(acks)} messages")
        now += 1.0
    return spent, handled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    per_message = []
    for r in range(args.repeat):
        spent, handled = measure(args.members, args.queries, r + 1)
        per_message.append(spent / handled)
        print(f"run {r + 1}: {handled} messages, {1e6 * spent / handled:.1f} us per message")
    print(
        f"Entity Manager, {args.members} members: {1e6 * statistics.fmean(per_message):.1f} us "
        f"per message (min {1e6 * min(per_message):.1f}, max {1e6 * max(per_message):.1f})"
    )


if __name__ == "__main__":
    main()
