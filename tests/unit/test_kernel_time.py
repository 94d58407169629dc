"""A request's time (attention_grading.kernels.kernel_time.Allowance), in-process: the kernel's own time is
the wall-clock time less the time its main thread waited for a CPU, capped on the wall clock.
The clock and the run-queue readings are given here; tests/test_kernels.py starves a real kernel."""
import os

import pytest

from attention_grading.kernels import kernel_time
from attention_grading.kernels.kernel_time import Allowance, run_queue_wait


class Machine:
    """A wall clock and a run-queue reading that the test moves forward."""

    def __init__(self):
        self.now, self.waited = 100.0, 5.0

    def wait(self, pid):
        return self.waited


@pytest.fixture
def machine(monkeypatch):
    machine = Machine()
    monkeypatch.setattr(kernel_time, "monotonic", lambda: machine.now)
    return machine


def test_an_idle_machine_counts_the_wall_clock(machine):
    """With no wait for a CPU, own time is wall time, and the limit ends on time."""
    allowance = Allowance(1, limit=10, stretch=4, waited=machine.wait)
    machine.now += 6
    assert allowance.own() == 6 and allowance.left() == 4
    machine.now += 4
    assert allowance.left() <= 0


def test_time_spent_waiting_for_a_cpu_does_not_count(machine):
    """8 s of wall time of which 5 s in the run queue: 3 s of own time, 7 s left."""
    allowance = Allowance(1, limit=10, stretch=4, waited=machine.wait)
    machine.now += 8
    machine.waited += 5
    assert allowance.own() == pytest.approx(3) and allowance.left() == pytest.approx(7)


def test_the_wall_clock_still_ends_every_limit(machine):
    """A kernel that waits for a CPU all the time is stopped at stretch × limit of wall time."""
    allowance = Allowance(1, limit=10, stretch=4, waited=machine.wait)
    machine.now += 39
    machine.waited += 39
    assert allowance.own() == 0 and allowance.left() == pytest.approx(1)
    machine.now += 1
    machine.waited += 1
    assert allowance.left() <= 0


def test_the_notebooks_deadline_comes_first(machine):
    """``until`` (the notebook's own limit) ends the request even with time left."""
    allowance = Allowance(1, limit=10, stretch=4, until=machine.now + 2, waited=machine.wait)
    machine.now += 2
    assert allowance.left() <= 0 < allowance.limit - allowance.own()


def test_a_reading_that_fails_falls_back_to_the_wall_clock(machine):
    """No reading (the process is gone, not Linux): own time is wall time, never more."""
    readings = iter([5.0, None])
    allowance = Allowance(1, limit=10, stretch=4, waited=lambda pid: next(readings))
    machine.now += 7
    assert allowance.own() == 7
    never_read = Allowance(1, limit=10, stretch=4, waited=lambda pid: None)
    machine.now += 3
    assert never_read.own() == 3 and never_read.left() == 7


def test_a_reading_that_goes_back_never_gives_more_than_the_wall_clock(machine):
    """A pid reused by another thread reads less wait than at the start: own time stays ≤ wall."""
    readings = iter([50.0, 1.0])
    allowance = Allowance(1, limit=10, stretch=4, waited=lambda pid: next(readings))
    machine.now += 2
    assert allowance.own() == 2


def test_run_queue_wait_reads_linux_and_answers_none_elsewhere():
    """This process's reading is a number of seconds; a pid that does not exist gives None."""
    assert isinstance(run_queue_wait(os.getpid()), float)
    assert run_queue_wait(2 ** 30) is None and run_queue_wait(None) is None
