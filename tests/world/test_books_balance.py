"""Every built-in scenario's books balance (world/books.py): the radios', MACs' and
items' own counts agree with what the media told the observers, and every packet
and item ended, or is still on its way, exactly once.

The runs are the regression check's reduced ones (regression.py's CASES): every
variant and condition of each scenario, fewer items.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from regression import CASES

from iotbench.scenarios import expand, load_scenario
from iotbench.world import run_one
from iotbench.world.books import MAX_KEPT, Books, UnbalancedBooks, run_one_with_books
from iotbench.world.run import World
from same_metrics import same_metrics


def balanced_run(config: dict, seed: int) -> tuple[World, Books]:
    """One run with its books kept, not raising: the world it ran and its books."""
    books = Books(strict=False)
    run_one(config, seed, watch=books)
    assert books.world is not None
    return books.world, books


# The point-to-point studies carry no radio: S1 stands for them (the packets' and
# items' rules); S2's and S3's runs would add a minute and nothing new.
SCENARIOS = [case for case in CASES if case[0] not in ("s2-coap-vs-http", "s3-robustness")]


@pytest.mark.parametrize(("name", "overrides", "filters"), SCENARIOS, ids=[c[0] for c in SCENARIOS])
def test_the_books_of_every_run_balance(name, overrides, filters) -> None:
    problems = []
    for run in expand(load_scenario(name), filters, overrides):
        world, books = balanced_run(run.config, run.seed)
        assert world.sim.events_processed > 0
        problems += [f"{run.label()}: {problem}" for problem in books.check(world)]
    assert not problems, "\n".join(problems[:20])


def test_the_books_of_the_worked_example_balance() -> None:
    """docs/examples/multihop-coap.toml: the standard MAC's CSMA-CA over many hops,
    which the studies' scenarios (the chip's own CSMA, Contiki's) do not run."""
    example = Path(__file__).parents[2] / "docs" / "examples" / "multihop-coap.toml"
    for run in expand(load_scenario(str(example))):
        world, books = balanced_run(run.config, run.seed)
        assert world.items.stats.delivered > 0
        assert books.check(world) == []


def test_the_books_see_what_does_not_add_up() -> None:
    """The check can fail: a MAC that counts an ACK it never sent, a radio whose
    meter put a millisecond of sending under listening (what a radio left locked
    onto a frame while it sent did before 2026-11-30), and packet memory that
    holds bytes nothing waits in, each show."""
    run = expand(load_scenario("s4-single-hop-scheduled"), {"variant": ["coap-put-con"]})[0]
    world, books = balanced_run(run.config, run.seed)
    assert books.check(world) == []
    mac = next(iter(world.net.macs.values()))
    mac.counters.acks_sent += 1
    meter = world.net.radios[mac.name].power
    meter.tx_s -= 0.001
    meter.listen_s += 0.001
    memory = next(m for m in world.net.macs.values() if m.pktbuf is not None).pktbuf
    memory.used += 10  # a leak: taken, never given back
    problems = books.check(world)
    assert any("ACKs sent" in p for p in problems)
    assert any("packet memory holds" in p for p in problems)
    assert any("s in TX, but its frames took" in p for p in problems)
    # A rule broken at every packet: the first MAX_KEPT are kept, the rest counted.
    for i in range(MAX_KEPT + 50):
        books._note(f"packet {i}")
    assert len(books.problems) == MAX_KEPT
    assert "and 50 more problems of packets like those" in books.check(world)


def test_a_run_whose_books_do_not_balance_fails_loudly() -> None:
    """`iotbench run --check-books` runs `run_one_with_books`: books that balance
    give the run's result, books that do not raise, naming what differs."""
    run = expand(load_scenario("s4-single-hop-scheduled"), {"variant": ["coap-put-con"]})[0]
    checked = run_one_with_books(run.config, run.seed).metrics
    assert same_metrics(checked, run_one(run.config, run.seed).metrics)

    class LeakyBooks(Books):
        def ended(self, world: World) -> None:
            next(iter(world.net.macs.values())).counters.acks_sent += 1
            super().ended(world)

    with pytest.raises(UnbalancedBooks, match="ACKs sent"):
        run_one(run.config, run.seed, watch=LeakyBooks())
