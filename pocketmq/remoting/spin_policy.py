"""SpinPolicy: whether busy polling should spin, decided from what recent spins achieved (pure, no I/O).

A spin pays when the answer arrives while the loop spins (it skips the wake-up of a sleeping thread) and when
the spinner takes a core nobody else needs. On a machine without an idle core it does the opposite: the
spinner holds the core the other side needs to answer. The measurements behind this policy, and behind each of
its thresholds, are in bench/README.md ("The push and consume drop explained: the spin policy",
"e2e.py --contend").

Like an adaptive mutex, the policy keeps running averages and spins only while all of them say it pays:

- hits: the share of recent spins during which data arrived (a spin that timed out is a miss). Below
  ``min_hit_rate`` it stops spinning, except one spin in ``probe_every`` that measures again, so it resumes
  once spins pay again.
- crowding: the share of recent samples of the machine's runnable tasks (``/proc/loadavg``'s running count,
  sampled by the caller every ``sample_interval``) that exceeded its cores: some task was waiting for a CPU.
  Above ``max_crowding`` it does not spin at all: spinning would take that task's turn.
- waiting: the share of recent samples in which the polling thread, of the time it wanted a CPU, spent more
  than ``max_wait_share`` waiting for one (the scheduler's run delay against its CPU time: a task of another
  process held its core). Above ``max_crowding`` it does not spin either. The runnable count alone misses the
  commonest crowding: a client and its server answering each other beside a CPU-bound process. They
  alternate, so whenever one of them samples, the other sleeps and the count says "2 tasks, 2 cores" while
  the spinner holds the core its peer is woken for. (Involuntary context switches do not tell crowded from
  idle: the process's own threads preempt its spinning loop thread too. A share of wall time would not
  either: at a thousand requests a second a loop thread is runnable a small share of the time, crowded or
  not.)
  A sample counts as waiting only when the average wait per time the thread was put on a CPU is also above
  ``min_wait_per_run``: an idle machine's wake-up latency is a few microseconds per run, a CPU taken by
  another process costs tens. Without that, a loop that stopped spinning counted its own wake-ups (requests,
  and its own threads handing back the GIL) as crowding and never spun again.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class SpinPolicy:
    """Whether busy polling should spin, from running averages of what recent spins achieved and how crowded
    the CPUs are."""

    cpus: int
    min_hit_rate: float = 0.3
    max_crowding: float = 0.5
    max_wait_share: float = 0.1  # of the time the polling thread was runnable, spent waiting for a CPU
    min_wait_per_run: float = 12e-6  # seconds waited per time on a CPU, above an idle machine's wake-up latency
    probe_every: int = 16
    weight: float = 0.125  # of a new sample in the running averages (about the last 8 count)
    # Seconds between samples (the caller samples: two /proc reads). Short enough that the averages forget a
    # crowded phase within a phase of bench/e2e.py, cheap enough to take while busy (bench/README.md).
    sample_interval: float = 0.01
    always: bool = False  # spin whatever the averages say (for measuring what the policy buys)
    hit_rate: float = 1.0
    crowding: float = 0.0
    waiting: float = 0.0
    _declined: int = 0

    def record_spin(self, hit: bool) -> None:
        """A spin ended: ``hit`` when data arrived during it, False when it ran out its window."""
        self.hit_rate += self.weight * ((1.0 if hit else 0.0) - self.hit_rate)

    def record_runnable(self, running: int) -> None:
        """A sample of the machine's runnable tasks, this process's spinning thread included."""
        self.crowding += self.weight * ((1.0 if running > self.cpus else 0.0) - self.crowding)

    def record_run_delay(self, waited: float, ran: float, runs: int = 0) -> None:
        """A sample: since the last one the polling thread ran ``ran`` seconds in ``runs`` turns on a CPU and
        waited ``waited`` seconds for one while runnable (``runs`` 0: not known, the share alone decides)."""
        crowded = waited > self.max_wait_share * (waited + ran) and (
            runs <= 0 or waited > self.min_wait_per_run * runs)
        self.waiting += self.weight * ((1.0 if crowded else 0.0) - self.waiting)

    def should_spin(self) -> bool:
        """Asked at each activity: spin for the window after it?"""
        if self.always:
            return True
        if self.crowding > self.max_crowding or self.waiting > self.max_crowding:
            return False
        if self.hit_rate >= self.min_hit_rate:
            self._declined = 0
            return True
        self._declined += 1
        if self._declined >= self.probe_every:  # measure again now and then: the load may have changed
            self._declined = 0
            return True
        return False


def parse_running(loadavg: str) -> int | None:
    """The running-task count of a ``/proc/loadavg`` line ("0.20 0.18 0.12 3/214 8823" -> 3), else None."""
    parts = loadavg.split()
    if len(parts) < 4 or "/" not in parts[3]:
        return None
    running = parts[3].split("/", 1)[0]
    return int(running) if running.isdigit() else None
