"""Execute preprocessor for ``nbgrader autograde`` that a submission cannot fool or derail.

It replaces nbgrader's ``Execute`` (see ``nbgrader_config.py``) and adds, per notebook:

- a guard channel (``guard``) so the grader itself asks the judge for every hidden test and
  records the verdict: a hidden test cell scores only when the grader saw it pass;
- flags for any reach into the instructor's files: the exercises involved score 0 and the
  submission is listed in ``grading-notes.json`` beside the autograded notebook;
- recovery from a dead kernel (``os._exit``, a segfault) or one that ignores interrupts: the
  cell is marked, a fresh kernel replays the earlier non-test cells, grading goes on;
- caps on printed output and a time limit for the whole notebook.
"""
import copy
import json
import os
import re
import socket
import sys
import tempfile
import threading
from pathlib import Path
from time import monotonic

from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbclient.util import run_sync
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import Execute
from traitlets import Bool, Integer, default

from .forked_kernels import ForkingKernelManager
from .guard import cell_hash
from .paths import REFERENCE_DIR

HIDDEN_CHECK = re.compile(r"""check\(\s*["']([A-Za-z_][A-Za-z0-9_]*)["']""")
NOTES_FILE = "grading-notes.json"
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _error(ename, evalue):
    return NotebookNode(output_type="error", ename=ename, evalue=evalue,
                        traceback=[f"{ename}: {evalue}"])


def _transformed(source):
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        return TransformerManager().transform_cell(source)
    except Exception:
        return source


def _mentions(source, names):
    """Does ``source`` use any of these names (as whole words)?"""
    return any(re.search(rf"\b{re.escape(name)}\b", source) for name in names)


def _has_error(cell):
    return any(o.get("output_type") == "error" or
               (o.get("output_type") == "stream" and o.get("name") == "stderr")
               for o in cell.get("outputs", []))


class Plan:
    """The roles of a notebook's cells, read from their nbgrader metadata."""

    def __init__(self, nb):
        self.solutions, self.owner, self.hidden, self.tests, self.trusted = {}, {}, {}, [], set()
        current = None
        for index, cell in enumerate(nb.cells):
            meta = cell.metadata.get("nbgrader", {})
            if cell.cell_type != "code":
                continue
            if meta.get("solution"):
                current = meta.get("grade_id")
                self.solutions[current] = index
                self.owner[index] = current
            elif meta.get("grade") or meta.get("locked"):
                # The kernel compiles IPython's transformed source (magics become calls).
                self.trusted |= {cell_hash(cell.source), cell_hash(_transformed(cell.source))}
                if meta.get("grade"):
                    self.tests.append(index)
                    self.owner[index] = current
                    match = HIDDEN_CHECK.search(cell.source) if "BEGIN HIDDEN TESTS" in cell.source else None
                    if match:
                        self.hidden[index] = match.group(1)

    def tests_of(self, function):
        return [i for i in self.tests if self.owner.get(i) == function]


class GuardServer:
    """The grader's end of the guard channel: answers kernels, records everything by cell."""

    def __init__(self, trusted_cells):
        from . import judge  # the reference is imported here, in the grader, never in the kernel

        self._judge = judge.judge
        self.trusted_cells = sorted(trusted_cells)
        self.current = None
        self.records = []
        self.expected_eof = set()
        self._folder = tempfile.mkdtemp(prefix="attention-guard-")
        self.address = os.path.join(self._folder, "guard.sock")
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(self.address)
        self._sock.listen(8)
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        reader = conn.makefile("r", encoding="utf-8")
        with conn:
            while True:
                try:
                    line = reader.readline(64 * 2**20)
                except (OSError, ValueError):
                    line = ""
                if not line:
                    self._record(self.current, "eof", {}, {})
                    return
                try:
                    message = json.loads(line)
                    reply = self._respond(message)
                except Exception as exc:  # a forged or broken message: answer, record, go on
                    message, reply = {"type": "malformed"}, {"passed": False, "message": str(exc)[:300]}
                try:
                    conn.sendall((json.dumps(reply) + "\n").encode("utf-8"))
                except OSError:
                    return

    def _respond(self, message):
        kind = message.get("type")
        index = self.current
        if kind == "hello":
            reply = {"trusted_cells": self.trusted_cells}
        elif kind == "judge":
            try:
                reply = self._judge(message["request"])
            except Exception as exc:
                reply = {"passed": False, "cases": 0, "message": f"the judge could not read this request ({exc})"}
        elif kind == "flag":
            reply = {"ok": True}
        else:
            reply = {"error": "unknown message"}
        self._record(index, kind, message, reply)
        return reply

    def _record(self, index, kind, message, reply):
        with self._lock:
            self.records.append({"cell": index, "type": kind, "message": message, "reply": reply})

    def close(self):
        try:
            self._sock.close()
        finally:
            try:
                os.unlink(self.address)
                os.rmdir(self._folder)
            except OSError:
                pass


class GuardedExecute(Execute):
    """nbgrader's Execute, plus the guard, authoritative hidden verdicts and crash recovery."""

    notebook_timeout = Integer(600, help="Seconds for the whole notebook; later cells are not run.").tag(config=True)
    max_stream_chars = Integer(100_000, help="Printed characters kept per cell.").tag(config=True)
    max_outputs = Integer(50, help="Outputs kept per cell.").tag(config=True)
    max_restarts = Integer(12, help="Fresh kernels per notebook after crashes or hangs.").tag(config=True)

    timeout_after_hang = Integer(5, help="Seconds for ungraded cells, and for the tests of a function that "
                                 "was running when a cell timed out, once a cell has timed out.").tag(config=True)
    fork_kernels = Bool(True, help="Fork kernels from a warm parent (forked_kernels) instead of "
                        "starting each one cold.").tag(config=True)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.fork_kernels:
            self.kernel_manager_class = ForkingKernelManager

    def _get_timeout(self, cell):
        # Once the submission has hung, ungraded cells (and the tests of a function that was
        # running when it hung) get a short timeout: they would otherwise each wait the full one,
        # spinning a core. Other graded cells keep theirs.
        if getattr(self, "_hung_once", False) and cell is not None:
            meta = cell.metadata.get("nbgrader", {})
            suspect = meta.get("grade") and _mentions(cell.source, self._crashing)
            if not meta.get("grade") or suspect:
                return max(self.timeout_after_hang, 1)
        return super()._get_timeout(cell)

    @default("extra_arguments")
    def _guard_at_startup(self):
        return ["--IPKernelApp.exec_lines=__import__('attention_grading.guard').guard.install()"]

    def preprocess(self, nb, resources=None, km=None):
        if str(REFERENCE_DIR) not in sys.path:
            sys.path.insert(0, str(REFERENCE_DIR))
        self._plan = Plan(nb)
        self._server = GuardServer(self._plan.trusted)
        self._deadline = monotonic() + self.notebook_timeout
        self._crashed, self._hung, self._restarts, self._late, self._skipped = [], [], 0, [], []
        self._crashing = set()
        self._printed = {}
        self._hung_once = False
        # Kernels inherit these: the guard's address, and one BLAS thread each, since graders
        # run one kernel per core and oversubscribed BLAS threads slow matrix products badly.
        kernel_env = {"ATTENTION_GUARD": self._server.address}
        kernel_env.update({k: "1" for k in BLAS_THREADS if k not in os.environ})
        saved = {k: os.environ.get(k) for k in kernel_env}
        os.environ.update(kernel_env)
        try:
            nb, resources = super().preprocess(nb, resources, km)
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
            self._server.close()
        self._settle(nb, resources)
        return nb, resources

    # ------------------------------------------------------------------ running cells

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code":
            return cell, resources
        if monotonic() > self._deadline:
            self._late.append(index)
            if index in self._plan.tests:
                cell.outputs = [_error("GradingTimeLimit", "not run: the notebook used up its "
                                       f"{self.notebook_timeout} s of grading time")]
            return cell, resources
        if self._calls_crashed_code(cell):
            cell.outputs = [NotebookNode(output_type="stream", name="stdout", text=(
                "[not run by the grader: it calls a function that already crashed or hung]\n"))]
            self._skipped.append(index)
            return cell, resources
        self._server.current = index
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
        except CellTimeoutError:
            # the kernel answered the interrupt but kept running (it swallowed it)
            cell.outputs.append(_error("CellTimeoutError", f"the cell ran longer than {self.timeout} s"))
            self._hung_once = True
            self._hung.append(index)
            self._mark_broken(cell, index)
            self._server.expected_eof.add(index)
            self._recover(index)
            return cell, resources
        except DeadKernelError:
            cell.outputs.append(_error("KernelDied", "the kernel died while running this cell "
                                       "(os._exit, a crash, or too much memory); later cells ran in a fresh kernel"))
            self._crashed.append(index)
            self._mark_broken(cell, index)
            self._server.expected_eof.add(index)
            self._recover(index)
            return cell, resources
        timed_out = any(o.get("ename") == "CellTimeoutError" for o in cell.outputs)
        self._hung_once = self._hung_once or timed_out
        if timed_out:
            self._mark_broken(cell, index)
        if timed_out and not self._responsive():
            self._hung.append(index)
            self._server.expected_eof.add(index)
            self._recover(index)
        return cell, resources

    def _mark_broken(self, cell, index):
        """Remember the graded functions a cell that crashed or hung was using."""
        self._crashing |= {name for name in self._plan.solutions if _mentions(cell.source, [name])}
        if self._plan.owner.get(index):
            self._crashing.add(self._plan.owner[index])

    def _calls_crashed_code(self, cell):
        """An ungraded cell (a demo, a visible check) that uses a function which crashed or hung.

        Running it would only kill or stall the next kernel too; graded cells and answers always run.
        """
        meta = cell.metadata.get("nbgrader", {})
        if not self._crashing or meta.get("grade") or meta.get("solution") or meta.get("grade_id") == "setup":
            return False
        return _mentions(cell.source, self._crashing)

    def _responsive(self):
        """Does the kernel still run code? (It may have swallowed the interrupt and kept looping.)"""
        saved, self.timeout = self.timeout, 10
        try:
            self.wait_for_reply(self.kc.execute("pass", store_history=False))
            return True
        except Exception:
            return False
        finally:
            self.timeout = saved

    def _recover(self, upto):
        """A fresh kernel with the definitions of every earlier non-test cell replayed."""
        while True:
            self._restarts += 1
            if self._restarts > self.max_restarts:
                self._deadline = 0  # give up: remaining test cells score 0 with a message
                return
            run_sync(self.km.restart_kernel)(now=True)
            self.kc.stop_channels()
            self.start_new_kernel_client()
            self.wait_for_reply(self.kc.kernel_info())
            skip = set(self._crashed) | set(self._hung) | set(self._plan.tests) | set(self._skipped)
            try:
                for j in range(upto):
                    original = self.nb.cells[j]
                    if original.cell_type != "code" or j in skip:
                        continue
                    self._server.current = j
                    self.execute_cell(copy.deepcopy(original), j, store_history=True)
                    self.nb.cells[j] = original  # keep what the first run showed
                return
            except DeadKernelError:
                self.nb.cells[j] = original
                self._crashed.append(j)
                self._server.expected_eof.add(j)

    def output(self, outs, msg, display_id, cell_index):
        """Keep at most ``max_outputs`` outputs and ``max_stream_chars`` printed characters per cell."""
        if msg["msg_type"] == "stream":
            used = self._printed.get(cell_index, 0)
            text = msg["content"].get("text", "")
            if used >= self.max_stream_chars:
                return None
            self._printed[cell_index] = used + len(text)
            if used + len(text) > self.max_stream_chars:
                msg = copy.deepcopy(msg)
                msg["content"]["text"] = (text[: self.max_stream_chars - used]
                                          + "\n[... further output cut by the grader ...]\n")
        elif len(outs) >= self.max_outputs:
            return None
        return super().output(outs, msg, display_id, cell_index)

    # ------------------------------------------------------------------ verdicts

    def _settle(self, nb, resources):
        plan, records = self._plan, list(self._server.records)
        last_cell = self._server.current  # the kernel's channel closes when it shuts down after this cell
        flags = []
        for record in records:
            kind, index = record["type"], record["cell"]
            if kind == "flag":
                flags.append({"cell": index, "why": record["message"].get("detail", ""),
                              "functions": record["message"].get("functions", [])})
            elif kind == "judge":
                name = record["message"].get("request", {}).get("name")
                if plan.hidden.get(index) != name:
                    flags.append({"cell": index, "why": f"asked the judge about {name!r} outside its hidden test",
                                  "functions": []})
            elif kind == "eof" and index not in self._server.expected_eof and index != last_cell:
                flags.append({"cell": index, "why": "closed the grader's guard channel", "functions": []})
            elif kind == "malformed":
                flags.append({"cell": index, "why": "sent a forged message to the grader", "functions": []})

        unique = {}
        for flag in flags:
            unique.setdefault((flag["cell"], flag["why"]), flag)
        flags = list(unique.values())
        zeroed = set()
        for flag in flags:
            # Blame the function that reached out (the innermost submission frame), else the
            # exercise whose cell was running, else every exercise of the notebook.
            innermost = flag["functions"][0] if flag["functions"] else None
            if innermost in plan.solutions:
                zeroed.add(innermost)
            elif plan.owner.get(flag["cell"]):
                zeroed.add(plan.owner[flag["cell"]])
            else:
                zeroed |= set(plan.solutions)
        for function in sorted(zeroed):
            for index in plan.tests_of(function):
                nb.cells[index].outputs.append(_error(
                    "GradingIntegrityError", f"{function} scores 0: the submission used or looked for the "
                    "instructor's hidden files or grading channel; it is flagged for review"))

        for index, function in plan.hidden.items():
            cell = nb.cells[index]
            verdicts = [r["reply"] for r in records if r["type"] == "judge" and r["cell"] == index
                        and r["message"].get("request", {}).get("name") == function]
            if _has_error(cell) or index in self._late:
                continue
            if not verdicts:
                cell.outputs.append(_error("HiddenTestNotRun", f"the hidden test of {function} never reached "
                                           "the grader, so it cannot score"))
            elif not verdicts[0].get("passed"):
                cell.outputs.append(_error("HiddenTestFailure", verdicts[0].get("message", "failed")))

        restoring = nb.metadata.get("attention_grading", {})
        notes = {
            "flags": flags,
            "restored_cells": restoring.get("restored_cells", []),
            "missing_answer_cells": restoring.get("missing_answer_cells", []),
            "zeroed_exercises": sorted(zeroed),
            "crashed_cells": [self._describe(nb, i) for i in self._crashed],
            "hung_cells": [self._describe(nb, i) for i in self._hung],
            "not_run_cells": [self._describe(nb, i) for i in self._late],
            "skipped_cells": [self._describe(nb, i) for i in self._skipped],
            "kernel_restarts": min(self._restarts, self.max_restarts),
            "verdicts": {plan.hidden[r["cell"]]: r["reply"].get("passed") for r in records
                         if r["type"] == "judge" and r["cell"] in plan.hidden
                         and r["message"].get("request", {}).get("name") == plan.hidden[r["cell"]]},
        }
        resources.setdefault("attention_grading", {}).update(notes)
        folder = (resources.get("metadata") or {}).get("path")
        if folder and os.environ.get("NBGRADER_EXECUTION") == "autograde":
            Path(folder, NOTES_FILE).write_text(json.dumps(notes, indent=2))

    @staticmethod
    def _describe(nb, index):
        cell = nb.cells[index]
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        first = cell.source.strip().splitlines()[0][:80] if cell.source.strip() else ""
        return {"cell": index, "grade_id": grade_id, "starts_with": first}
