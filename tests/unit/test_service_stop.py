"""A stop asked of the grading service is never lost (cli.serve_stop)."""
import subprocess
import sys
import textwrap
from pathlib import Path

GRADING = Path(__file__).resolve().parents[2] / "instructor" / "grading"

# SIGTERM lands while a finalizer runs: Python drops the KeyboardInterrupt raised there
# ("Exception ignored in ..."), as it did once when a deadline rush ended and the service served on.
PROGRAM = textwrap.dedent("""
    import os, signal, sys
    sys.path.insert(0, sys.argv[1])
    from attention_grading.cli import serve_stop

    serve_stop.install()

    class Finalized:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(100000):          # the handlers run here, inside the finalizer
                pass

    Finalized()
    print("served on after the signal", flush=True)
    try:
        serve_stop.check()
    except KeyboardInterrupt:
        print("the loop's check stops", flush=True)
""")


def test_a_stop_whose_interrupt_python_dropped_is_still_seen_by_the_loop():
    """SIGTERM during a finalizer: the interrupt is dropped, the loop's check still stops."""
    done = subprocess.run([sys.executable, "-c", PROGRAM, str(GRADING)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    # The failure this guards against is real: the program went on after the signal...
    assert "served on after the signal" in done.stdout
    assert "Exception ignored" in done.stderr and "KeyboardInterrupt" in done.stderr
    # ...and the remembered stop ends it.
    assert "the loop's check stops" in done.stdout


def test_no_stop_asked_the_check_lets_the_service_go_on():
    """Without a signal, the loop's check does nothing."""
    program = ("import sys; sys.path.insert(0, sys.argv[1]); from attention_grading.cli import serve_stop; "
               "serve_stop.install(); serve_stop.check(); print('on')")
    done = subprocess.run([sys.executable, "-c", program, str(GRADING)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "on", done.stderr


def test_a_stop_held_during_a_save_is_remembered_when_the_save_ends():
    """Ctrl-C during a save: the save ends, then the stop is raised and remembered."""
    program = textwrap.dedent("""
        import os, signal, sys
        sys.path.insert(0, sys.argv[1])
        from attention_grading.cli import serve_stop
        from attention_grading.run.lock import deferred_interrupt

        serve_stop.install()
        saved = False
        try:
            with deferred_interrupt():
                os.kill(os.getpid(), signal.SIGINT)
                for _ in range(100000):
                    pass
                saved = True
        except KeyboardInterrupt:
            print("stopped after the save" if saved else "stopped mid-save")
        print("remembered" if serve_stop.requested.is_set() else "forgotten")
    """)
    done = subprocess.run([sys.executable, "-c", program, str(GRADING)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["stopped", "after", "the", "save", "remembered"], done.stdout
