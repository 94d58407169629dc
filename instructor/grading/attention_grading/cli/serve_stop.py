"""How the grading service is stopped: Ctrl-C or SIGTERM (a hub stopping it, ``kill``), after the
save in progress (``run.lock.deferred_interrupt`` holds Ctrl-C during a save).

The signal raises KeyboardInterrupt wherever the service's main thread is, so a run stops at once.
But Python drops an exception raised inside a finalizer (``__del__``, a generator closed by the
garbage collector: "Exception ignored in ..."): a stop landing there would be lost and the service
would serve on. So the signal is also remembered, and the service's loop asks ``check()`` each time
round.
"""
import os
import signal
import threading

requested = threading.Event()


def install():
    """Ctrl-C and SIGTERM stop the service. Started in the background by a shell, Python inherits
    SIGINT ignored: both must stop it wherever it was started."""
    requested.clear()

    def interrupt(signum, frame):
        requested.set()
        raise KeyboardInterrupt

    def terminate(signum, frame):
        requested.set()
        os.kill(os.getpid(), signal.SIGINT)      # as Ctrl-C: deferred while a save is in progress

    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, terminate)


def check():
    """KeyboardInterrupt when a stop was asked for, even one whose exception Python dropped."""
    if requested.is_set():
        raise KeyboardInterrupt
