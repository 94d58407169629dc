"""The grading service's queue: fair between learners.

Each learner has a line of their own (their submissions in the order they arrived); ``take``
goes round the learners, one submission from each in turn (the learner served longest ago first,
one never served before anyone served), and never hands out a second submission of a learner
whose first is still being graded. A learner who submits fifty times
therefore waits behind themself, never in front of anyone else: with ``n`` learners waiting, each
is at most ``n - 1`` submissions from the front.
"""
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field


@dataclass
class Arrival:
    """A submission found in the inbound folder."""
    student: str
    lesson: str
    inbound: str                  # its folder's name in the inbound folder (unique)
    arrived: object               # datetime (UTC) the kernel recorded for it
    queued_at: float = field(default_factory=time.monotonic)

    @property
    def key(self):
        return self.student, self.lesson


class FairQueue:
    """Round-robin over learners, one submission in flight per learner."""

    def __init__(self):
        self.lines = OrderedDict()      # student -> deque of Arrival, in the order learners first came
        self.in_flight = {}             # student -> Arrival
        self.known = set()              # inbound names queued or in flight
        self.served = {}                # student -> when last served (a count of takes)
        self.turn = 0

    def __len__(self):
        return sum(len(line) for line in self.lines.values())

    def put(self, arrival):
        """Queue ``arrival`` unless it is queued or in flight already; True if it was queued."""
        if arrival.inbound in self.known:
            return False
        self.known.add(arrival.inbound)
        self.lines.setdefault(arrival.student, deque()).append(arrival)
        return True

    def take(self, most):
        """Up to ``most`` submissions, each of a different learner with nothing in flight: the
        learners served longest ago first (never served: first of all), in the order they came."""
        waiting = [s for s, line in self.lines.items() if line and s not in self.in_flight]
        waiting.sort(key=lambda s: self.served.get(s, -1))      # stable: ties keep arrival order
        taken = []
        for student in waiting[:max(0, most)]:
            line = self.lines[student]
            arrival = line.popleft()
            if not line:
                del self.lines[student]
            self.in_flight[student] = arrival
            self.turn += 1
            self.served[student] = self.turn
            taken.append(arrival)
        return taken

    def done(self, arrival):
        """``arrival`` is answered (or given back with ``put_back``)."""
        self.in_flight.pop(arrival.student, None)
        self.known.discard(arrival.inbound)

    def put_back(self, arrival):
        """``arrival`` was taken but not answered (the service stops): first in its learner's line."""
        self.in_flight.pop(arrival.student, None)
        self.lines.setdefault(arrival.student, deque()).appendleft(arrival)
        self.served.pop(arrival.student, None)

    def waits(self, now=None):
        """{student: seconds their oldest queued submission has waited}."""
        now = time.monotonic() if now is None else now
        return {student: now - line[0].queued_at for student, line in self.lines.items() if line}
