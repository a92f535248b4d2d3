"""SpinPolicy: the decisions of adaptive busy polling, fed by hand (the policy is pure)."""

from __future__ import annotations

import asyncio

import pytest

from pocketmq.remoting.busy_poll import BusyPoller
from pocketmq.remoting.spin_policy import SpinPolicy, parse_running
from tests.conftest import wait_until

pytestmark = pytest.mark.usefixtures("no_other_pollers")


def test_spins_while_spins_see_data_arrive() -> None:
    p = SpinPolicy(cpus=2)
    for _ in range(100):
        p.record_spin(hit=True)
        assert p.should_spin()


def test_stops_after_spins_that_saw_nothing_and_probes_now_and_then() -> None:
    p = SpinPolicy(cpus=2, probe_every=4)
    misses = 0
    while p.should_spin():
        p.record_spin(hit=False)
        misses += 1
    assert 5 <= misses <= 12  # the running average forgets the good past in a few spins, not at once
    decisions = [p.should_spin() for _ in range(12)]
    assert decisions.count(True) == 3  # one in probe_every
    # Probes that hit bring spinning back.
    while not p.should_spin():
        pass
    for _ in range(10):
        p.record_spin(hit=True)
    assert all(p.should_spin() for _ in range(20))


def test_no_spin_while_tasks_wait_for_a_cpu() -> None:
    p = SpinPolicy(cpus=2)
    for _ in range(3):
        p.record_runnable(3)  # one task more than cores: someone waits
    assert p.should_spin()  # a moment of crowding is not enough
    for _ in range(10):
        p.record_runnable(3)
    assert not p.should_spin()
    assert not any(p.should_spin() for _ in range(100))  # no probing either: a spin would take a turn
    for _ in range(10):
        p.record_runnable(2)  # the spinner and its peer, each on a core: nobody waits
    assert p.should_spin()


def test_parse_running() -> None:
    assert parse_running("0.20 0.18 0.12 3/214 8823\n") == 3
    assert parse_running("garbage") is None
    assert parse_running("1 2 3 x/5 6") is None


# The poller tests: the hit/miss rule alone (max_crowding=1.0: a machine that other processes crowd, sampled from
# /proc, never stops the spin here; the crowding rule is tested on the pure policy above).


async def test_a_poller_whose_spins_see_nothing_stops_spinning() -> None:
    # Sends with no answer: each spin runs out its window without data arriving.
    loop = asyncio.get_running_loop()
    poller = BusyPoller(loop, 0.001, SpinPolicy(cpus=64, probe_every=1000, max_crowding=1.0))
    started = 0
    for _ in range(30):
        poller.poke(arrived=False)
        if poller.spinning:
            started += 1
            await wait_until(lambda: not poller.spinning)
    assert 5 <= started < 30
    poller.poke(arrived=False)
    assert not poller.spinning


async def test_a_poller_whose_spins_see_answers_keeps_spinning() -> None:
    loop = asyncio.get_running_loop()
    poller = BusyPoller(loop, 0.05, SpinPolicy(cpus=64, max_crowding=1.0))
    for _ in range(30):
        poller.poke(arrived=False)  # a request goes out
        assert poller.spinning
        await asyncio.sleep(0)
        poller.poke(arrived=True)  # its answer comes in during the spin
        poller._deadline = 0.0  # end this spin now (a hit): the next request starts a new one
        await wait_until(lambda: not poller.spinning)
    assert poller.policy.hit_rate > 0.9


def test_no_spin_while_the_polling_thread_waits_for_a_cpu() -> None:
    # A client and its server answering each other beside a CPU-bound process: the runnable count sampled
    # by either says "no one waits" (the other sleeps then), but each waits for a CPU a quarter of the time
    # it wants one.
    p = SpinPolicy(cpus=2)
    for _ in range(3):
        p.record_runnable(2)
        p.record_run_delay(0.002, 0.006)
    assert p.should_spin()  # a moment of it is not enough
    for _ in range(10):
        p.record_run_delay(0.002, 0.006)
    assert not any(p.should_spin() for _ in range(100))  # no probing: a spin would take a turn
    for _ in range(10):
        p.record_run_delay(0.0002, 0.006)  # idle machine: the odd wake-up of a kernel thread
    assert p.should_spin()


def test_waiting_counts_against_the_time_the_thread_wanted_a_cpu_not_wall_time() -> None:
    # 1,000 requests/s beside a CPU-bound process: runnable 3 ms in a 50 ms sample, a third of it waiting.
    p = SpinPolicy(cpus=2)
    for _ in range(20):
        p.record_run_delay(0.001, 0.002)
    assert not p.should_spin()
    q = SpinPolicy(cpus=2)
    for _ in range(20):
        q.record_run_delay(0.0, 0.0)  # a sample with no activity at all
    assert q.should_spin()


def test_wake_ups_of_an_idle_machine_are_not_crowding() -> None:
    # A broker's loop thread that stopped spinning, on an idle 2-core VM: woken ~185 times in a 50 ms sample
    # (requests, its own threads handing back the GIL), 7 us of wake-up latency each: 13 % of its runnable
    # time. Counted as crowding, it would never spin again.
    p = SpinPolicy(cpus=2)
    for _ in range(20):
        p.record_run_delay(185 * 7e-6, 0.0087, runs=185)
    assert p.waiting == 0.0 and p.should_spin()


def test_a_cpu_taken_by_another_process_costs_tens_of_microseconds_a_run() -> None:
    # The same thread beside a CPU-bound process: 46 % of its runnable time waiting, ~40 us a run.
    p = SpinPolicy(cpus=2)
    for _ in range(20):
        p.record_run_delay(220 * 40e-6, 0.0103, runs=220)
    assert not any(p.should_spin() for _ in range(100))
    for _ in range(20):  # the CPU-bound process ends: short waits again, spinning resumes
        p.record_run_delay(185 * 7e-6, 0.0087, runs=185)
    assert p.should_spin()


def test_a_long_wait_in_few_runs_is_crowding_whatever_the_count() -> None:
    # Runs unknown (0): the share alone decides, as before the count was read.
    p = SpinPolicy(cpus=2)
    for _ in range(20):
        p.record_run_delay(0.002, 0.006, runs=0)
    assert not p.should_spin()
    q = SpinPolicy(cpus=2)
    for _ in range(20):
        q.record_run_delay(0.002, 0.006, runs=10)  # 200 us a run
    assert not q.should_spin()


def test_always_spins_whatever_the_samples_say() -> None:
    p = SpinPolicy(cpus=2, always=True)
    for _ in range(20):
        p.record_spin(hit=False)
        p.record_runnable(8)
        p.record_run_delay(1.0, 1.0)
    assert p.should_spin()
