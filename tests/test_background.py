"""The background runs' lanes (tests/background.py): never more runs at once than lanes, and
runs start in the order they became ready."""
import threading

from background import Lanes


def test_lanes_hold_at_most_their_width_and_start_runs_in_the_order_they_came():
    """Four runs in two lanes: two go at once, the third waits for a lane, and the queue is first
    come, first served."""
    lanes, started, release = Lanes(2), [], {name: threading.Event() for name in "abcd"}
    most, running, guard = [0], [0], threading.Lock()

    def run(name, entered):
        lanes.enter(name)
        with guard:
            started.append(name)
            running[0] += 1
            most[0] = max(most[0], running[0])
        entered.set()
        release[name].wait(30)
        with guard:
            running[0] -= 1
        lanes.leave()

    threads, entered = [], {}
    for name in "abcd":
        entered[name] = threading.Event()
        threads.append(threading.Thread(target=run, args=(name, entered[name]), daemon=True))
        threads[-1].start()
        if name in "ab":
            assert entered[name].wait(30), f"{name} found no free lane"
        else:                               # it must queue: wait until it is there, behind the others
            for _ in range(3000):
                if name in lanes._queue or entered[name].is_set():
                    break
                threading.Event().wait(0.01)
    assert started == ["a", "b"] and not entered["c"].is_set()
    release["b"].set()
    assert entered["c"].wait(30) and not entered["d"].is_set()
    release["a"].set()
    assert entered["d"].wait(30)
    release["c"].set()
    release["d"].set()
    for thread in threads:
        thread.join(30)
    assert started == ["a", "b", "c", "d"] and most[0] == 2
