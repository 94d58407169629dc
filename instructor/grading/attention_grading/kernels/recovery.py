"""What ``GuardedExecute`` does when learner code crashes its kernel or hangs: remember which
graded functions were running, skip the demonstrations that would only crash or hang again, and
go on in a fresh kernel that has the earlier cells' definitions replayed.
"""
import copy

from nbclient.util import run_sync
from nbformat.notebooknode import NotebookNode

from ..cells import mentions


class KernelRecovery:
    """A mixin for ``GuardedExecute``; it keeps its state on the executor (``_crashed``,
    ``_hung``, ``_crashing``, ``_restarts``, ...), which ``GuardedExecute.preprocess`` resets
    for every notebook."""

    def _crash(self, cell, index):
        self._crashed.append(index)
        self._mark_broken(cell.source, index)
        self._recover(index)

    def _hang(self, cell, index, mark=True):
        self._hung_once = True
        self._hung.append(index)
        if mark:
            self._mark_broken(cell.source, index)
        self._recover(index)

    def _mark_broken(self, source, index):
        """Remember the graded functions a cell that crashed or hung was using."""
        self._crashing |= {name for name in self._plan.solutions if mentions(source, [name])}
        if self._plan.owner.get(index):
            self._crashing.add(self._plan.owner[index])

    def _calls_crashed_code(self, cell):
        """An ungraded cell (a demo, a visible check) that uses a function which crashed or hung.

        Running it would only kill or stall the next kernel too; graded cells and answers always run.
        """
        meta = cell.metadata.get("nbgrader", {})
        if not self._crashing or meta.get("grade") or meta.get("solution") or meta.get("grade_id") == "setup":
            return False
        return mentions(cell.source, self._crashing)

    def _responsive(self):
        """Does the kernel still run code? (It may have swallowed the interrupt and kept looping, or
        taken it and stopped answering.)

        A kernel that took the interrupt runs ``pass`` in milliseconds; one still looping would
        only burn the wait, so the wait is short and a fresh kernel costs little more.
        """
        saved, self.timeout = self.timeout, 3
        try:
            # nbclient gives None, not an error, when the reply does not come in time
            return self.wait_for_reply(self.kc.execute("pass", store_history=False)) is not None
        except Exception:
            return False
        finally:
            self.timeout = saved

    def _recover(self, upto):
        """A fresh kernel with the definitions of every earlier non-test cell replayed (what the
        replay shows is dropped: each cell keeps what its first run showed, at its own index)."""
        while True:
            self._restarts += 1
            if self._restarts > self.max_restarts:
                self._deadline = 0  # give up: remaining test cells score 0 with a message
                return
            run_sync(self.km.restart_kernel)(now=True)
            self.kc.stop_channels()
            self.start_new_kernel_client()
            self.wait_for_reply(self.kc.kernel_info())
            broken = set(self._crashed) | set(self._hung) | set(self._skipped)
            replies = dict(self._replies)
            try:
                for j in range(upto):
                    source = self._replay_source(j, broken)
                    if source is None:
                        continue
                    original = self.nb.cells[j]
                    try:
                        self.execute_cell(NotebookNode(copy.deepcopy(original), source=source), j,
                                          store_history=True)
                    finally:
                        self.nb.cells[j] = original  # nbclient stored the copy there: keep the first run
                return
            except Exception:          # it died again, or broke the protocol: skip that cell
                self._crashed.append(j)
            finally:
                self._replies = replies

    def _replay_source(self, index, broken):
        """The code a fresh kernel runs again for cell ``index``, or None: every code cell before
        the one that broke, except tests and cells that broke a kernel themselves."""
        cell = self.nb.cells[index]
        if cell.cell_type != "code" or index in broken or index in self._plan.tests:
            return None
        return cell.source
