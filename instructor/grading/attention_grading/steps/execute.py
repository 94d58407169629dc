"""Execute preprocessor for ``nbgrader autograde`` that a submission cannot fool or derail.

It replaces nbgrader's ``Execute`` (see ``nbgrader_config.py``) and adds, per notebook:

- a sandbox for every kernel (``sandbox``, through ``kernels``): the learner's code runs with no
  privileges, sees its own scratch folder only, has no network, has limits on memory, time and
  processes, and everything it starts dies with it. Grading stops (``SandboxUnavailable``) where
  the machine cannot do that, unless the instructor sets ``GuardedExecute.sandbox = False``;
- hidden tests driven from here: a hidden test cell's visible part runs in the kernel, in its
  place, its hidden block never does; the grader sends the cases in as data and judges what comes
  back (``hidden_tests``), so no reference, spec or expected value ever enters the kernel. The
  hidden tests run after the notebook's last cell, in order, each on the functions as they were at
  its cell: no cell of the learner's runs once a hidden input, or a stand-in's answer to one, has
  entered the kernel, so none can show them. Cases are drawn per attempt (``attempts``);
- measurements in kernels of their own: the calls whose memory decides points run in fresh
  kernels where the grader's meter started before any learner code (``fresh_measurement``);
- a verdict for every graded code cell, decided here and never read from the cell's outputs:
  the hidden test's, or (a graded cell without one, which no lesson has) whether the cell ran
  without an error; a test whose visible part failed, or that did not run, fails. The verdicts go
  to ``resources``; ``verdicts.ApplyVerdicts`` turns them into the only outputs that can score;
- recovery from a dead kernel (``os._exit``, a segfault, the memory limit) or one that ignores
  interrupts: the cell is marked, a fresh kernel replays the earlier non-test cells, grading goes on;
- caps on every kind of output (``output_caps``), on the size of any message from the kernel, and
  a time limit for the whole notebook.
"""
import os
import shutil
import tempfile
from pathlib import Path
from time import monotonic

from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbclient.util import run_sync
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import Execute
from traitlets import Bool, Dict, Float, Integer, Unicode

from ..kernels import sandbox
from ..hidden import registry
from ..hidden.attempts import AttemptLedger, handed_in_digest
from ..hidden.cases import case_generator, case_key, course_secret
from ..cells import CellPlan, error_output, grade_id, mentions, split_hidden
from ..kernels.measurement import FreshKernelMeasurement
from ..hidden.calls import plan_calls
from ..hidden.conversation import Conversation, ConversationLimits, StopTest
from ..hidden.decide import cases_pass, decide
from ..kernels.session import KernelSession
from ..kernels.kernel_time import OwnTimeLimits
from ..kernels.manager import KernelSandboxError, SandboxedKernelManager, SandboxRequest, shadowing_files
from ..learner_text import well_formed
from ..kernels.output_caps import OutputBudget
from ..kernels.recovery import KernelRecovery
from ..results import CRASHED, NOT_RUN, NOTES_KEY, RAISED, RAN, REFUSED, TIMEOUT, Flag, NotebookNotes, Verdict

# Run in the kernel right after the visible part of a hidden-test cell (a request of its own, silent):
# which functions the notebook's names stand for there, so that its test (after the last cell)
# calls those. A learner can change what it keeps only to choose among functions of their own.
KEPT = "__attention_kept__"
REMEMBER = """
try:
    globals().setdefault({kept!r}, {{}})[{key!r}] = {{_n: globals()[_n] for _n in {names!r} if _n in globals()}}
except Exception:
    pass
"""


def _code_digest(source):
    import hashlib

    return hashlib.sha256(source.strip().encode()).hexdigest()


class GuardedExecute(KernelRecovery, FreshKernelMeasurement, OwnTimeLimits, Execute):
    """nbgrader's Execute, with sandboxed kernels, grader-driven hidden tests and crash recovery."""

    notebook_timeout = Integer(600, help="Seconds for the whole notebook; later cells are not run.").tag(config=True)
    hidden_test_timeout = Integer(None, allow_none=True,
                                  help="Seconds for each case of a hidden test (default: Execute.timeout), "
                                       "times the test's own time_factor (lesson 07's training: 6, lesson "
                                       "08's tiles: 3).").tag(config=True)
    measurement_timeout_factor = Float(4.0, help="The batch of a hidden test's measurement calls (lesson 03's "
                                       "determinism, lesson 08's memory) gets this many times a case's "
                                       "time.").tag(config=True)
    iopub_timeout = Integer(30, help="Seconds to wait, once a cell's reply has come, for the outputs the "
                            "kernel sent before it (nbclient's default, 4 s, is too short for a cell's "
                            "megabytes of output on a busy machine). After an interrupt the wait stays "
                            "4 s (kernel_time.AFTER_INTERRUPT): a kernel that swallowed the interrupt "
                            "never says it is done.").tag(config=True)
    max_stream_chars = Integer(100_000, help="Printed characters kept per cell.").tag(config=True)
    max_outputs = Integer(50, help="Outputs kept per cell.").tag(config=True)
    max_cell_output_bytes = Integer(1 << 20, help="Bytes of outputs of every kind (text, pictures, HTML, "
                                    "errors, widget state) kept per cell; later ones are dropped with a "
                                    "note.").tag(config=True)
    max_notebook_output_bytes = Integer(8 << 20, help="Bytes of outputs of every kind kept per notebook "
                                        "(what the autograded notebook and its feedback can grow "
                                        "by).").tag(config=True)
    max_output_depth = Integer(32, help="Deepest nesting of lists and objects kept in an output (deeper "
                               "ones are replaced by a note).").tag(config=True)
    max_restarts = Integer(12, help="Fresh kernels per notebook after crashes or hangs.").tag(config=True)
    timeout_after_hang = Integer(5, help="Seconds for ungraded cells, and for the tests of a function that "
                                 "was running when a cell timed out, once a cell has timed out.").tag(config=True)
    time_stretch = Float(4.0, help="Time limits (cells, hidden tests) count the kernel's own time: "
                         "wall-clock time less the time its main thread waited for a CPU that other "
                         "processes held (kernel_time.py). Each limit still ends after this many times "
                         "its length of wall-clock time.").tag(config=True)
    fork_kernels = Bool(True, help="Fork kernels from a warm parent (kernels.py) instead of "
                        "starting each one cold.").tag(config=True)
    sandbox = Bool(True, help="Run every kernel in the operating-system sandbox. Set False only "
                   "where the machine cannot sandbox (every run then warns): learner code would "
                   "run with the grader's rights.").tag(config=True)
    sandbox_limits = Dict(help="Values for the sandbox's limits (sandbox.limits.Limits: memory_bytes, "
                          "cpu_seconds, ...; the README's settings table lists each), e.g. "
                          "{'memory_bytes': 2 << 30}.").tag(config=True)
    case_secret = Unicode("", help="The course's secret (hex) from which each submission's hidden-test "
                          "cases are drawn; default: instructor/hidden-cases.secret of the course, made "
                          "on first use (make grade passes it to every job).").tag(config=True)
    case_key = Unicode("", help="The key of this submission's attempt (attempts.case_key), which its cases "
                       "are drawn from under case_secret; make grade records the attempt and passes it to "
                       "each job. Default: the attempt is recorded in the course's history/ from the "
                       "files in submitted/.").tag(config=True)
    render_figures = Bool(False, help="Draw every matplotlib figure as a picture in graded notebooks. Off: "
                          "the lesson's own figures show as one line of text (rendering every picture "
                          "of every submission costs up to as much as grading it, and learners see "
                          "them when they run the notebook); see learner_figures.").tag(config=True)
    learner_figures = Bool(True, help="Draw the figures of the cells the learner wrote: their answers and "
                           "cells that are not the lesson's (source/<lesson>/<lesson>.ipynb), so that "
                           "their own plots reach the feedback while the lesson's figures cost "
                           "nothing.").tag(config=True)
    figure_dpi = Integer(72, help="Resolution (dots per inch) of the figures drawn for the learner's "
                         "cells.").tag(config=True)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.kernel_manager_class = SandboxedKernelManager
        if not self.render_figures:
            self.extra_arguments = [*self.extra_arguments, "--InlineBackend.figure_formats=set()"]
        self.extra_arguments = [*self.extra_arguments,
                                f"--InlineBackend.print_figure_kwargs={{'bbox_inches': 'tight', 'dpi': {self.figure_dpi}}}"]

    # ------------------------------------------------------------------ the kernel and its sandbox

    def create_kernel_manager(self):
        return self._configure_kernel_manager(super().create_kernel_manager(), self._sandbox_request, self._scratch)

    def _configure_kernel_manager(self, km, request, scratch):
        km.fork_kernels = self.fork_kernels
        limits = ConversationLimits(parent=self)
        km.max_message_bytes, km.message_queue = limits.max_message_bytes, limits.message_queue
        km.sandbox_request = request
        km.connection_file = os.path.join(scratch, "connection.json")
        return km

    def _prepare_sandbox(self, resources):
        """The kernel's scratch folder and sandbox request; a line describing the sandbox."""
        folder = (resources.get("metadata") or {}).get("path") or os.getcwd()
        self._notes.flags += [vars(Flag(f"the submission handed in {entry!r} beside the notebook, under the name of an "
                                        f"installed package ({name}): the kernel imports the installed one, never it"))
                              for entry, name in shadowing_files(folder)]
        if not self.sandbox:
            self.log.warning("grading WITHOUT a sandbox (GuardedExecute.sandbox = False): learner code "
                             "runs with the grader's rights")
            self._scratch, self._sandbox_request = tempfile.mkdtemp(prefix="attention-kernel-"), None
            return None
        self._sandbox_request = SandboxRequest.for_submission(folder, self._course_root(), self.sandbox_limits)
        self._scratch = self._sandbox_request.scratch
        return self._sandbox_request.describe()

    def _course_root(self):
        try:
            return str(self.config.CourseDirectory.root) or os.getcwd()
        except AttributeError:
            return os.getcwd()

    def _kernel_log(self):
        try:
            return Path(self._scratch, "kernel.log").read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def _attempt_key(self, resources):
        """The case key of the submission being graded (plain ``nbgrader autograde``): its attempt
        recorded in the course's ledger (``attempts``), from every file in its submitted/ folder."""
        from nbgrader.coursedir import CourseDirectory

        info = resources.get("nbgrader") or {}
        student, lesson = info.get("student"), info.get("assignment")
        if student and lesson:
            coursedir = CourseDirectory(config=self.config)
            folder = coursedir.format_path(coursedir.submitted_directory, student, lesson)
            if os.path.isdir(folder):
                digest = handed_in_digest(folder)
                return AttemptLedger(self._course_root()).record(student, lesson, digest).key(student, lesson)
        folder = (resources.get("metadata") or {}).get("path") or os.getcwd()
        self.log.warning("no submission in submitted/ for this notebook: its cases are drawn from its own folder")
        return case_key(student or "", lesson or "", 0, handed_in_digest(folder))

    # ------------------------------------------------------------------ the notebook

    def preprocess(self, nb, resources=None, km=None):
        from ..hidden.reference import reference

        resources = resources if resources is not None else {}
        self._plan = CellPlan(nb.cells)
        self._reference = reference()
        self._secret = bytes.fromhex(self.case_secret or course_secret(self._course_root()))
        self._case_key = self.case_key or self._attempt_key(resources)
        self._hidden_order, self._kept, self._after_last_cell = [], set(), False
        self._notes = NotebookNotes()
        self._notes.sandbox = self._prepare_sandbox(resources)
        self._deadline = monotonic() + self.notebook_timeout
        self._crashed, self._hung, self._restarts, self._late, self._skipped = [], [], 0, [], []
        self._crashing, self._completed, self._replies = set(), set(), {}
        self._budget = OutputBudget(self.max_outputs, self.max_stream_chars, self.max_cell_output_bytes,
                                    self.max_notebook_output_bytes, self.max_output_depth)
        self._hung_once = False
        self._lesson_cells = self._lesson_code(resources)
        self._drawing = self.render_figures
        try:
            nb, resources = super().preprocess(nb, resources, km)
        except KernelSandboxError as exc:
            raise sandbox.SandboxUnavailable(f"a kernel could not be sandboxed: {exc}") from None
        finally:
            self._notes.kernel_log = self._kernel_log() if (self._crashed or self._hung) else ""
            shutil.rmtree(self._scratch, ignore_errors=True)
        notes = self._notes
        notes.crashed_cells = [self._describe(nb, i) for i in self._crashed]
        notes.hung_cells = [self._describe(nb, i) for i in self._hung]
        notes.not_run_cells = [self._describe(nb, i) for i in self._late]
        notes.skipped_cells = [self._describe(nb, i) for i in self._skipped]
        notes.kernel_restarts = min(self._restarts, self.max_restarts)
        restoring = nb.metadata.get(NOTES_KEY, {})
        notes.restored_cells = restoring.get("restored_cells", [])
        notes.missing_answer_cells = restoring.get("missing_answer_cells", [])
        notes.restored_metadata = restoring.get("restored_metadata", [])
        notes.flags += [vars(Flag(f"the nbgrader metadata of {name} was changed; the gradebook's was used",
                                  grade_id=name)) for name in notes.restored_metadata]
        resources[NOTES_KEY] = notes.as_dict()
        return nb, resources

    def _get_timeout(self, cell):
        # Once the submission has hung, ungraded cells (and the tests of a function that was
        # running when it hung) get a short timeout: they would otherwise each wait the full one.
        timeout = super()._get_timeout(cell)        # (also starts the request's clock)
        if self._hung_once and cell is not None:
            meta = cell.metadata.get("nbgrader", {})
            suspect = meta.get("grade") and mentions(cell.source, self._crashing)
            if not meta.get("grade") or suspect:
                return max(self.timeout_after_hang, 1)
        return timeout

    def preprocess_cell(self, cell, resources, index):
        cell, resources = self._preprocess_cell(cell, resources, index)
        if index == len(self.nb.cells) - 1:
            self._hidden_tests_after_the_last_cell()
        return cell, resources

    def _preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code":
            return cell, resources
        if monotonic() > self._deadline:
            self._late.append(index)
            if index in self._plan.tests:
                self._record(cell, Verdict(self._function(cell, index), False, "not run: the notebook used up "
                                           f"its {self.notebook_timeout} s of grading time", kind=NOT_RUN))
            return cell, resources
        if self._calls_crashed_code(cell):
            cell.outputs = [NotebookNode(output_type="stream", name="stdout", text=(
                "[not run by the grader: it calls a function that already crashed or hung]\n"))]
            self._skipped.append(index)
            return cell, resources
        if index in self._plan.hidden:
            return self._hidden_test_cell(cell, resources, index)
        cell, resources = self._run_cell(cell, resources, index)
        if index in self._plan.tests:
            self._record(cell, self._ran_verdict(cell, index))
        return cell, resources

    def _record(self, cell, verdict):
        verdict.message = well_formed(verdict.message)
        self._notes.verdicts[grade_id(cell)] = verdict.as_dict()

    def _function(self, cell, index):
        return self._plan.hidden.get(index) or self._plan.owner.get(index) or grade_id(cell)

    def _failed(self, index):
        """Why the cell's run failed (the kernel died, hung, or replied with an error), or None."""
        if index in self._crashed:
            return "the kernel died while running it"
        if index in self._hung:
            return "it did not finish in the time allowed"
        reply = self._replies.get(index)
        if reply is None:
            return "the kernel did not answer"
        if reply.get("status") != "ok":
            return self._budget.clip(f"{reply.get('ename', 'Error')}: {reply.get('evalue', '')}", 300)
        return None

    def _ran_verdict(self, cell, index):
        """The verdict of a graded cell without a hidden test: whether it ran without an error
        (from the kernel's execute reply: such a cell tests inside the kernel, which no lesson does)."""
        failed = self._failed(index)
        name = self._function(cell, index)
        if failed is None:
            return Verdict(name, True, "the cell ran without an error", kind=RAN)
        kind = CRASHED if index in self._crashed else TIMEOUT if index in self._hung else RAISED
        return Verdict(name, False, f"the cell failed: {failed}", kind=kind)

    # ------------------------------------------------------------------ the learner's own figures

    def _lesson_code(self, resources):
        """Digests of the lesson's code cells (``source/<lesson>/<lesson>.ipynb`` of the course),
        or None where that notebook is not at hand."""
        import nbformat

        lesson = (resources.get("nbgrader") or {}).get("assignment")
        path = Path(self._course_root(), "source", str(lesson), f"{lesson}.ipynb")
        if not (self.learner_figures and lesson and path.is_file()):
            return None
        return {_code_digest(c.source) for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"}

    def _learners_own(self, cell):
        """An answer, or a cell the lesson does not have: the learner wrote it."""
        meta = cell.metadata.get("nbgrader", {})
        if self._lesson_cells is None or meta.get("grade"):
            return False
        return bool(meta.get("solution")) or _code_digest(cell.source) not in self._lesson_cells

    def _draw_figures(self, on, index):
        """Switch the kernel's inline figures to pictures (PNG) or text, with a cell of our own that
        leaves no history; a kernel that does not take it only loses its pictures."""
        if on == self._drawing:
            return
        formats = "['png']" if on else "[]"       # no braces: IPython expands {...} in a magic's line
        switch = NotebookNode(cell_type="code", metadata={}, outputs=[], source=(
            f"get_ipython().run_line_magic('config', \"InlineBackend.figure_formats = {formats}\")"))
        cell, replies = self.nb.cells[index], dict(self._replies)
        try:
            run_sync(self.async_execute_cell)(switch, index, store_history=False)
            self._drawing = on
        except Exception:               # its own kernel broke: the next cell finds out, and recovers
            self._drawing = None
        finally:                        # nbclient stores a cell it ran at its index: the real one stays
            self.nb.cells[index], self._replies = cell, replies

    def _recover(self, upto):
        self._drawing = self.render_figures        # a fresh kernel starts as configured
        if self._after_last_cell:                  # the hidden tests: the whole notebook, as it ran
            upto = len(self.nb.cells)
        return super()._recover(upto)

    def _replay_source(self, index, broken):
        """What a fresh kernel runs again for cell ``index``: what the cell runs, and at a hidden
        test's cell whose visible part ran, the functions it keeps for its test."""
        if index in self._kept and index not in broken:
            return self._remember(index)
        return super()._replay_source(index, broken)

    def _remember(self, index):
        return REMEMBER.format(kept=KEPT, key=str(index), names=tuple(sorted(self._plan.solutions)))

    def _run_cell(self, cell, resources, index):
        if not self.render_figures and self._lesson_cells is not None:
            self._draw_figures(self._learners_own(cell), index)
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
        except CellTimeoutError:
            # the kernel answered the interrupt but kept running (it swallowed it)
            cell.outputs.append(error_output("CellTimeoutError", f"the cell ran longer than {self.timeout} s"))
            self._hang(cell, index)
            return cell, resources
        except DeadKernelError:
            cell.outputs.append(error_output("KernelDied", "the kernel died while running this cell (os._exit, "
                                             "a crash, or too much memory); later cells ran in a fresh kernel"))
            self._crash(cell, index)
            return cell, resources
        except Exception as exc:       # a message the client cannot read: the kernel broke the protocol
            cell.outputs.append(error_output("KernelProtocolError", "the kernel sent a message the grader "
                                             f"cannot read ({type(exc).__name__}); later cells ran in a fresh kernel"))
            self._notes.flags.append(vars(Flag(f"the kernel broke the messaging protocol ({type(exc).__name__})",
                                               index, grade_id(cell))))
            self._crash(cell, index)
            return cell, resources
        timed_out = (self._replies.get(index) or {}).get("ename") == "CellTimeoutError"
        if timed_out:
            self._hung_once = True
            self._mark_broken(cell.source, index)
            if not self._responsive():
                self._hang(cell, index, mark=False)
        return cell, resources

    # ------------------------------------------------------------------ hidden tests

    def _hidden_test_cell(self, cell, resources, index):
        """Run the cell's visible part in the kernel, then keep which functions its test calls;
        the test itself runs after the notebook's last cell (``_hidden_tests_after_the_last_cell``)."""
        name = self._plan.hidden[index]
        original = cell.source
        cell.source = split_hidden(original)[0]
        try:
            cell, resources = self._run_cell(cell, resources, index)
        finally:
            cell.source = original
        if self._failed(index) is None:
            self._keep_functions(cell, index)
        failed = self._failed(index)
        if failed is not None:
            self._record(cell, Verdict(name, False, f"the visible part of this test cell failed: {failed}",
                                       kind=NOT_RUN))
            self._hidden_order.append((index, name, False))
        else:
            self._kept.add(index)
            self._hidden_order.append((index, name, True))
        return cell, resources

    def _keep_functions(self, cell, index):
        """Remember, in the kernel, the functions the test of cell ``index`` is to call; a kernel
        that dies or hangs doing so has done it at this cell (it is replaced, the test fails)."""
        self._replies.pop(index, None)
        try:
            reply = self.wait_for_reply(self.kc.execute(self._remember(index), silent=True, store_history=False,
                                                        allow_stdin=False))
        except DeadKernelError:
            reply = None
            self._crash(cell, index)
        except Exception:             # a message the client cannot read
            reply = None
            self._notes.flags.append(vars(Flag("the kernel broke the messaging protocol", index, grade_id(cell))))
            self._crash(cell, index)
        else:
            if reply is None:
                self._hang(cell, index)
        self._replies[index] = (reply or {}).get("content") or {}

    def _hidden_tests_after_the_last_cell(self):
        """Every hidden test whose visible part ran, in the notebook's order, once no cell of the
        learner's is left to run; an earlier function's stand-in is lent once its own test is over."""
        self._after_last_cell = True
        for index, name, ready in self._hidden_order:
            cell = self.nb.cells[index]
            if ready and monotonic() > self._deadline:
                self._record(cell, Verdict(name, False, "not run: the notebook used up its "
                                           f"{self.notebook_timeout} s of grading time", kind=NOT_RUN))
            elif ready:
                verdict = self._hidden_test(name, index, cell)
                self._record(cell, verdict)
                if verdict.kind == REFUSED:
                    self._notes.flags.append(vars(Flag(verdict.message, index, grade_id(cell))))
            self._completed.add(name)

    def _hidden_test(self, name, index, cell):
        spec = registry.get(name)
        g = case_generator(self._secret, self._case_key, name)
        cases = spec.cases(g)
        batches, callbacks, extra, measured = plan_calls(spec, cases, g)
        session = KernelSession(self.kc, self.km)
        conversation = Conversation(spec, self._reference, batches, callbacks, self._completed, len(cases),
                                    extra, ConversationLimits(parent=self), measured, cases=cases, kept=index)
        conversation.serve_until(min(measured, default=len(batches)))    # measured calls: fresh kernels
        started = monotonic()
        timeout = self.hidden_test_timeout or self.timeout or 30
        if name in self._crashing:      # it already hung or crashed a kernel in this notebook
            timeout = min(timeout, max(self.timeout_after_hang, 1))
        stopped = None
        try:
            run_sync(session.serve)(conversation, timeout, until=max(self._deadline, monotonic() + 1),
                                    measurement_factor=self.measurement_timeout_factor,
                                    stretch=self.time_stretch)
        except StopTest as stop:
            stopped = stop
            if stop.kind == CRASHED:
                self._crashed.append(index)
                self._mark_broken(cell.source, index)
                self._recover(index)
            elif stop.kind == REFUSED or not run_sync(session.settle)(self.km):
                # it ignored the interrupt (or the protocol broke): a fresh kernel goes on
                if stop.kind == TIMEOUT:
                    self._hung.append(index)
                    self._hung_once = True
                    self._mark_broken(cell.source, index)
                self._recover(index)
        if stopped is None and measured and cases_pass(spec, self._reference, cases, conversation):
            stopped = self._measure_in_fresh_kernels(conversation, measured, index, timeout)
        verdict = decide(spec, self._reference, cases, conversation, stopped)
        verdict.seconds = monotonic() - started
        return verdict

    # ------------------------------------------------------------------ what the kernel sends

    async def _check_raise_for_error(self, cell, cell_index, exec_reply):
        self._replies[cell_index] = (exec_reply or {}).get("content") or {}
        return await super()._check_raise_for_error(cell, cell_index, exec_reply)

    def on_cell_executed(self, **kwargs):
        """nbgrader shows an error reply as an output: its fields capped like any output."""
        content = kwargs["execute_reply"].get("content", {})
        if content.get("status") == "error":
            clip = self._budget.clip
            content["ename"], content["evalue"] = clip(content.get("ename"), 200), clip(content.get("evalue"))
            lines = content.get("traceback") if isinstance(content.get("traceback"), list) else []
            content["traceback"] = [clip(line, 2000) for line in lines[:60]]
        return super().on_cell_executed(**kwargs)

    def output(self, outs, msg, display_id, cell_index):
        """Keep an output only well-formed and within the caps (``output_caps``)."""
        parent = msg["parent_header"].get("msg_id")
        if self.output_hook_stack[parent]:       # captured by an Output widget: widget state
            if self._budget.admit(msg, cell_index, 0) is not None:
                self.output_hook_stack[parent][-1].output(outs, msg, display_id, cell_index)
            return None
        out = self._budget.admit(msg, cell_index, len(outs))
        if out is None:
            return None
        if self.clear_before_next_output:
            outs[:] = []
            self.clear_display_id_mapping(cell_index)
            self.clear_before_next_output = False
        if display_id and out.get("output_type") in ("display_data", "execute_result"):
            self._display_id_map.setdefault(display_id, {}).setdefault(cell_index, []).append(len(outs))
        outs.append(out)
        return out

    def _update_display_id(self, display_id, msg):
        """An update of earlier displays: applied only within the caps, counted once per display."""
        shown = sum(len(v) for v in self._display_id_map.get(display_id, {}).values())
        size = self._budget.measure(msg.get("content"))
        if shown and (size is None or not all(self._budget.spend(i, size * len(v)) for i, v in
                                              self._display_id_map[display_id].items())):
            return
        try:
            super()._update_display_id(display_id, msg)
        except Exception:      # a malformed update: the earlier displays stay as they were
            return

    def handle_comm_msg(self, outs, msg, cell_index):
        """Widget messages: kept (as widget state) only within the notebook's caps."""
        size = self._budget.measure([msg.get("content"), [len(b) for b in msg.get("buffers") or []]])
        buffers = sum(len(b) for b in msg.get("buffers") or [])
        if size is None or not self._budget.spend(cell_index, size + buffers):
            return
        try:
            super().handle_comm_msg(outs, msg, cell_index)
        except Exception:      # a malformed widget message: no widget state from it
            return

    @staticmethod
    def _describe(nb, index):
        cell = nb.cells[index]
        first = cell.source.strip().splitlines()[0][:80] if cell.source.strip() else ""
        return {"cell": index, "grade_id": grade_id(cell), "starts_with": first}
