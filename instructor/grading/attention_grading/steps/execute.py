"""Execute preprocessor for ``nbgrader autograde`` that a submission cannot fool or derail: the
nbgrader step over the guarded execution of ``kernels/``.

It replaces nbgrader's ``Execute`` (see ``nbgrader_config.py``) and adds, per notebook:

- a sandbox for every kernel (``kernels.sandbox``, through ``kernels.manager``): the learner's code
  runs with no privileges, sees its own scratch folder only, has no network, has limits on memory,
  time and processes, and everything it starts dies with it. Grading stops (``SandboxUnavailable``)
  where the machine cannot do that, unless the instructor sets ``GuardedExecute.sandbox = False``;
- hidden tests driven from here (``kernels.hidden_runs``): a hidden test cell's visible part runs in
  the kernel, in its place, its hidden block never does; the grader sends the cases in as data and
  judges what comes back (``hidden``), so no reference, spec or expected value ever enters the
  kernel. The hidden tests run after the notebook's last cell, in order, each on the functions as
  they were at its cell: no cell of the learner's runs once a hidden input, or a stand-in's answer
  to one, has entered the kernel, so none can show them. Cases are drawn per attempt
  (``hidden.attempts``, ``hidden.cases``);
- measurements in kernels of their own: the calls whose memory decides points run in fresh
  kernels where the grader's meter started before any learner code (``kernels.measurement``);
- a verdict for every graded code cell, decided here and never read from the cell's outputs:
  the hidden test's, or (a graded cell without one, which no lesson has) whether the cell ran
  without an error (``kernels.cell_runs``); a test whose visible part failed, or that did not run,
  fails. The verdicts go to ``resources[NOTES_KEY]``; ``verdicts.SaveVerdicts`` scores them and
  ``verdicts.ApplyVerdicts`` shows them;
- recovery from a dead kernel (``os._exit``, a segfault, the memory limit) or one that ignores
  interrupts (``kernels.recovery``): the cell is marked, a fresh kernel replays the earlier non-test
  cells, grading goes on;
- caps on every kind of output (``kernels.output_caps``), on the size of any message from the
  kernel, and a time limit for the whole notebook.

What it learns about one notebook is in one ``kernels.run_state.RunState`` (``self._state``),
made afresh by ``preprocess``; the functions of ``kernels/`` take it, and this executor, explicitly.
The nbclient hooks below (timeouts, replies, outputs) are the only methods nbclient calls.
"""
import os
import shutil
import tempfile
from pathlib import Path
from time import monotonic

from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import Execute
from traitlets import Bool, Dict, Float, Integer, Unicode

from ..cells import CellPlan, mentions
from ..hidden.attempts import AttemptLedger, handed_in_digest
from ..hidden.cases import case_key, course_secret
from ..hidden.conversation import ConversationLimits
from ..kernels import figures, sandbox
from ..kernels.cell_runs import ran_verdict, run_cell
from ..kernels.demonstrations import NOTE, demonstrations, hidden_reads, needs_whole_run
from ..kernels.hidden_runs import run_after_last_cell, run_visible_part
from ..kernels.kernel_time import OwnTimeLimits
from ..kernels.manager import KernelSandboxError, SandboxedKernelManager, SandboxRequest, shadowing_files
from ..kernels.output_caps import OutputBudget
from ..kernels.run_state import RunState
from ..results import NOT_RUN, NOTES_KEY, Verdict


class GuardedExecute(OwnTimeLimits, Execute):
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
    skip_demonstrations = Bool(True, help="Do not run the lesson's demonstrations while grading: its own "
                               "unchanged code cells that no answer, test or learner's cell needs "
                               "(kernels/demonstrations.py); a notebook that needs one after all is graded "
                               "whole. False: every cell runs, as stock nbgrader runs them.").tag(config=True)
    fork_kernels = Bool(True, help="Fork kernels from a warm parent (kernels/manager.py) instead of "
                        "starting each one cold.").tag(config=True)
    sandbox = Bool(True, help="Run every kernel in the operating-system sandbox. Set False only "
                   "where the machine cannot sandbox (every run then warns): learner code would "
                   "run with the grader's rights.").tag(config=True)
    sandbox_limits = Dict(help="Values for the sandbox's limits (sandbox.limits.Limits: memory_bytes, "
                          "cpu_seconds, ...; the settings page, docs/settings.md, lists each), e.g. "
                          "{'memory_bytes': 2 << 30}.").tag(config=True)
    case_secret = Unicode("", help="The course's secret (hex) from which each submission's hidden-test "
                          "cases are drawn; default: instructor/hidden-cases.secret of the course, made "
                          "on first use (make grade passes it to every job).").tag(config=True)
    case_key = Unicode("", help="The key of this submission's attempt (cases.case_key), which its cases "
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
        return self.configure_kernel_manager(super().create_kernel_manager(), self._state.sandbox_request,
                                             self._state.scratch)

    def configure_kernel_manager(self, km, request, scratch):
        """A kernel manager as every kernel of a notebook has it (its sandbox, its folder)."""
        km.fork_kernels = self.fork_kernels
        limits = ConversationLimits(parent=self)
        km.max_message_bytes, km.message_queue = limits.max_message_bytes, limits.message_queue
        km.sandbox_request = request
        km.connection_file = os.path.join(scratch, "connection.json")
        return km

    def _prepare_sandbox(self, state, resources):
        """The kernel's scratch folder and sandbox request (in ``state``); a line describing the sandbox."""
        folder = (resources.get("metadata") or {}).get("path") or os.getcwd()
        for entry, name in shadowing_files(folder):
            state.flag(f"the submission handed in {entry!r} beside the notebook, under the name of an "
                       f"installed package ({name}): the kernel imports the installed one, never it")
        if not self.sandbox:
            self.log.warning("grading WITHOUT a sandbox (GuardedExecute.sandbox = False): learner code "
                             "runs with the grader's rights")
            state.scratch, state.sandbox_request = tempfile.mkdtemp(prefix="attention-kernel-"), None
            return None
        state.sandbox_request = SandboxRequest.for_submission(folder, self._course_root(), self.sandbox_limits)
        state.scratch = state.sandbox_request.scratch
        return state.sandbox_request.describe()

    def _course_root(self):
        try:
            return str(self.config.CourseDirectory.root) or os.getcwd()
        except AttributeError:
            return os.getcwd()

    def _kernel_log(self):
        try:
            return Path(self._state.scratch, "kernel.log").read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def _attempt_key(self, resources):
        """The case key of the submission being graded (plain ``nbgrader autograde``): its attempt
        recorded in the course's ledger (``hidden.attempts``), from every file in its submitted/ folder."""
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
        """The notebook run without the lesson's demonstrations (``kernels.demonstrations``);
        graded whole, as it was handed in, when that run met a name only a skipped cell defines."""
        import copy

        resources = resources if resources is not None else {}
        whole = copy.deepcopy(nb) if self.skip_demonstrations else None
        self._case_key = self.case_key or self._attempt_key(resources)    # one attempt, whichever run
        try:
            nb_out, resources_out = self._preprocess(nb, resources, km, skip=self.skip_demonstrations)
            if not (self._state.demonstrations and needs_whole_run(self._state)):
                return nb_out, resources_out
            self.log.info("a name only a demonstration defines was needed: graded whole again")
            return self._preprocess(whole, resources, km, skip=False)
        finally:
            self._case_key = None

    def _preprocess(self, nb, resources, km, skip):
        from ..hidden.reference import reference

        state = RunState(CellPlan(nb.cells), OutputBudget(self.max_outputs, self.max_stream_chars,
                                                           self.max_cell_output_bytes,
                                                           self.max_notebook_output_bytes, self.max_output_depth))
        state.reference = reference()
        state.secret = bytes.fromhex(self.case_secret or course_secret(self._course_root()))
        state.case_key = self._case_key
        self._state = state
        state.notes.sandbox = self._prepare_sandbox(state, resources)
        state.deadline = monotonic() + self.notebook_timeout
        lesson = (resources.get("nbgrader") or {}).get("assignment")
        state.lesson_cells = figures.lesson_code(self._course_root(), lesson) if self.learner_figures else None
        state.drawing = self.render_figures
        if skip:
            ours = state.lesson_cells if state.lesson_cells is not None else figures.lesson_code(self._course_root(), lesson)
            state.demonstrations = demonstrations(nb.cells, ours, hidden_reads(state.plan))
        try:
            nb, resources = super().preprocess(nb, resources, km)
        except KernelSandboxError as exc:
            raise sandbox.SandboxUnavailable(f"a kernel could not be sandboxed: {exc}") from None
        finally:
            state.notes.kernel_log = self._kernel_log() if (state.crashed or state.hung) else ""
            shutil.rmtree(state.scratch, ignore_errors=True)
        resources[NOTES_KEY] = state.finish(nb, self.max_restarts).as_dict()
        return nb, resources

    def execute_plain(self, cell, resources, index):
        """nbgrader's own execution of one cell (``kernels.cell_runs`` guards it)."""
        return super().preprocess_cell(cell, resources, index)

    def preprocess_cell(self, cell, resources, index):
        cell, resources = self._guarded_cell(cell, resources, index)
        if index == len(self.nb.cells) - 1:
            run_after_last_cell(self, self._state)
        return cell, resources

    def _guarded_cell(self, cell, resources, index):
        state = self._state
        if cell.cell_type != "code":
            return cell, resources
        if monotonic() > state.deadline:
            state.late.append(index)
            if index in state.plan.tests:
                state.record(cell, Verdict(state.function_of(cell, index), False, "not run: the notebook used "
                                           f"up its {self.notebook_timeout} s of grading time", kind=NOT_RUN))
            return cell, resources
        if index in state.demonstrations:
            cell.outputs = [NotebookNode(output_type="stream", name="stdout", text=NOTE)]
            return cell, resources
        if state.calls_crashed_code(cell):
            cell.outputs = [NotebookNode(output_type="stream", name="stdout", text=(
                "[not run by the grader: it calls a function that already crashed or hung]\n"))]
            state.skipped.append(index)
            return cell, resources
        if index in state.plan.hidden:
            return run_visible_part(self, state, cell, resources, index)
        cell, resources = run_cell(self, state, cell, resources, index)
        if index in state.plan.tests:
            state.record(cell, ran_verdict(state, cell, index))
        return cell, resources

    # ------------------------------------------------------------------ nbclient's hooks

    def _get_timeout(self, cell):
        # Once the submission has hung, ungraded cells (and the tests of a function that was
        # running when it hung) get a short timeout: they would otherwise each wait the full one.
        timeout = super()._get_timeout(cell)        # (also starts the request's clock)
        state = getattr(self, "_state", None)
        if state is not None and state.hung_once and cell is not None:
            meta = cell.metadata.get("nbgrader", {})
            suspect = meta.get("grade") and mentions(cell.source, state.crashing)
            if not meta.get("grade") or suspect:
                return max(self.timeout_after_hang, 1)
        return timeout

    async def _check_raise_for_error(self, cell, cell_index, exec_reply):
        self._state.replies[cell_index] = (exec_reply or {}).get("content") or {}
        return await super()._check_raise_for_error(cell, cell_index, exec_reply)

    def on_cell_executed(self, **kwargs):
        """nbgrader shows an error reply as an output: its fields capped like any output."""
        content = kwargs["execute_reply"].get("content", {})
        if content.get("status") == "error":
            clip = self._state.budget.clip
            content["ename"], content["evalue"] = clip(content.get("ename"), 200), clip(content.get("evalue"))
            lines = content.get("traceback") if isinstance(content.get("traceback"), list) else []
            content["traceback"] = [clip(line, 2000) for line in lines[:60]]
        return super().on_cell_executed(**kwargs)

    def output(self, outs, msg, display_id, cell_index):
        """Keep an output only well-formed and within the caps (``output_caps``)."""
        parent = msg["parent_header"].get("msg_id")
        if self.output_hook_stack[parent]:       # captured by an Output widget: widget state
            if self._state.budget.admit(msg, cell_index, 0) is not None:
                self.output_hook_stack[parent][-1].output(outs, msg, display_id, cell_index)
            return None
        out = self._state.budget.admit(msg, cell_index, len(outs))
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
        size = self._state.budget.measure(msg.get("content"))
        if shown and (size is None or not all(self._state.budget.spend(i, size * len(v)) for i, v in
                                              self._display_id_map[display_id].items())):
            return
        try:
            super()._update_display_id(display_id, msg)
        except Exception:      # a malformed update: the earlier displays stay as they were
            return

    def handle_comm_msg(self, outs, msg, cell_index):
        """Widget messages: kept (as widget state) only within the notebook's caps."""
        size = self._state.budget.measure([msg.get("content"), [len(b) for b in msg.get("buffers") or []]])
        buffers = sum(len(b) for b in msg.get("buffers") or [])
        if size is None or not self._state.budget.spend(cell_index, size + buffers):
            return
        try:
            super().handle_comm_msg(outs, msg, cell_index)
        except Exception:      # a malformed widget message: no widget state from it
            return
