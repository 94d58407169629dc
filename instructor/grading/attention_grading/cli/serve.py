"""``make serve-grading``: grade each submission as it reaches the exchange, and release its
feedback at once.

Usage: python -m attention_grading.cli.serve [--root DIR] [--db-url URL] [--workers N]
                                         [--polling] [--exit-when-idle] [--unsandboxed]
                                         [--scheduler tls://HOST:8786] [--insecure-cluster]

In the foreground, holding the course's lock (``run.lock``: a second service, or ``make grade``,
refuses to start beside it). First everything that reached the inbound folder while no service
ran, then each new submission as it comes (``run.service_watch``: inotify through watchdog, else
polling), in a queue fair between learners (``run.service_queue``). For each submission:

1. the attempt rules (``run.service.AttemptLimits``): over the limit or within the cool-down, it
   is kept (``history/<student>/<lesson>/submissions/``) but not graded, and the learner's page
   says when the next attempt can be graded;
2. collected exactly as ``nbgrader collect --update`` collects it (the course's ``OwnedCollect``);
3. graded by ``make grade``'s own plan, run, store (``cli.grade``, reading that learner's lesson
   alone; ``cli.serve_runs``), on its workers (this machine's, or a Dask cluster's), the same
   sandbox, hidden cases drawn per attempt, manual grades kept by the same rules;
4. its feedback page (``make feedback``'s) released as ``nbgrader release_feedback <lesson>
   --student <student>`` does, with the attempt's number and the limit on it.

Each submission's way is journalled (``store.service_history``) before it is collected and after
its feedback is out, so a service killed mid-grading takes it up again on restart and answers it
once. Ctrl-C or SIGTERM stops after the save in progress (a submission not saved yet is taken up
again next time). grades.csv and the change log are written once the queue empties. Exit status:
0 after a stop, 75 when another service or make grade holds the course, 1 for another problem
with the course (the message says which).
"""
import argparse
import datetime
import os
import signal
import sys
import threading

from ..course import environment_tools_on_path
from ..errors import CourseBusy, CourseError, SelectionError
from ..run.backups import GradebookBackup, check_gradebook
from ..run.lock import course_lock
from ..run.plan import open_course
from ..run.service import (AttemptLimits, GradingService, attempt_banner, collect_one, collector, decide,
                           keep, notice_page, outbound_page, release_one, with_banner, write_atomically,
                           write_status, status_table)
from ..run.service_queue import FairQueue
from ..run.service_watch import InboundWatcher, ready_arrivals
from ..store import best_attempt
from ..store import roster as rosters
from ..store.service_history import ServiceHistory, utc_now
from .grade import _Pools, _run
from .serve_runs import ClassFiles, KeptPools, LooksWhileGrading


class Service:
    def __init__(self, course, sandboxed, workers=None, inotify=None, log=print, out=sys.stdout, scheduler=None,
                 insecure_cluster=False):
        self.course, self.sandboxed, self.log, self.out = course, sandboxed, log, out
        config = course.config
        self.settings, self.limits = GradingService(config=config), AttemptLimits(config=config)
        # make grade's workers: this machine's, or the Dask cluster's (--scheduler, else
        # c.DaskCluster.scheduler, with the course's certificates as make grade uses them).
        pools = _Pools(course, workers or self.settings.workers or None, None, scheduler, sandboxed, self._quiet,
                       insecure_cluster)
        self.pools = KeptPools(pools)
        self.width = pools.args[0]
        self.where = f"the Dask cluster at {pools.args[2]}" if pools.args[2] else "this machine"
        self.lock = threading.RLock()        # the service's state, shared with LooksWhileGrading
        self.class_files = ClassFiles(course, self._quiet)
        self.history, self.queue = ServiceHistory(course.root), FairQueue()
        self.answered = self.history.finished_inbound()
        self.not_submissions = set()
        try:
            self.collect = collector(config)
        except Exception as exc:         # nbgrader's ExchangeError: no inbound folder, not readable
            raise CourseError(f"the grading service cannot watch the exchange: {exc} (c.Exchange.root; "
                              "`nbgrader release_assignment <lesson>` makes the course's folders)") from None
        use_inotify = self.settings.inotify if inotify is None else inotify
        self.watcher = InboundWatcher(self.collect.inbound_path, use_inotify)
        self.latest, self.failures, self.state = [], [], "starting"
        self.status_path = course.root / self.settings.status_file
        self.snapshots = {}            # (student, lesson) -> best_attempt.Snapshot, with keep = "best"
        self.run_log = self.status_path.with_name("service.log")

    def _quiet(self, text=""):
        """``make grade``'s messages go to the service's log file, not the live table."""
        self.run_log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.run_log, "a") as fh:
            fh.write(f"{text}\n")

    # -- the loop -----------------------------------------------------------------------------

    def serve(self, exit_when_idle=False):
        self.log(f"grading service on {self.course.root}: watching {self.collect.inbound_path} "
                 f"({self.watcher.how}); {self.width} learner(s) at once on {self.where}; Ctrl-C stops")
        try:
            while True:
                with self.lock:
                    self.look()
                    batch = self.queue.take(self.width)
                if batch:
                    self.answer(batch)
                    continue
                self.write_class_files()           # the queue is empty: the class-wide files, once
                if exit_when_idle and not len(self.queue):
                    # A submission still being written is not ready yet: one more look once it
                    # could have settled.
                    self.watcher.wait(self.settings.settle_seconds)
                    self.look()
                    if not len(self.queue):
                        return
                    continue
                self.state = "idle"
                self.show()
                self.watcher.wait(self.settings.poll_seconds)
        finally:
            self.state = "stopped"
            self.watcher.stop()
            try:
                self.write_class_files()          # what was graded since the queue last emptied
            except KeyboardInterrupt:
                pass                              # written at the next start's first empty queue
            self.pools.pools.close()
            self.show()

    def write_class_files(self):
        """grades.csv, grades-by-learner.csv and the change log for what was graded since the last
        time (``serve_runs.ClassFiles``); a failure is named in the table, never fatal."""
        try:
            if self.class_files.write():
                self._quiet("wrote grades.csv and grades-by-learner.csv for the class")
        except Exception as exc:
            self.failures.append(f"grades.csv could not be written: {type(exc).__name__}: {exc}")

    def look(self):
        arrivals, refused = ready_arrivals(self.collect, self.course.lessons, self.answered | self.queue.known,
                                           self.settings.settle_seconds, self.not_submissions)
        for arrival in arrivals:
            self.queue.put(arrival)
        for name, why in refused:
            self.not_submissions.add(name)
            self.failures.append(f"{name}: not collected ({why})")

    def answer(self, batch):
        """Take up ``batch`` (at most one submission per learner): the refused ones are answered
        at once, the others graded together, then each one's feedback released."""
        to_grade = []
        for arrival in batch:
            decision = self._begin(arrival)
            if decision is not None:
                to_grade.append((arrival, decision))
        apart = self._off_roster({a.student for a, _ in to_grade})
        for arrival, decision in to_grade:
            if arrival.student in apart:        # kept (collected), graded nowhere, as make grade does
                self._notice(arrival, attempt_banner(decision), "Your account is not on this course's roster: "
                             "this attempt is kept but not graded. Ask your instructor to add you.")
                self._done(arrival, "refused", decision, reason="not on the roster")
        to_grade = [(a, d) for a, d in to_grade if a.student not in apart]
        if not to_grade:
            return
        self.state = "grading"
        self.show()
        lessons = sorted({a.lesson for a, _ in to_grade})
        students = sorted({a.student for a, _ in to_grade})
        try:
            self.class_files.before_grading()
            with LooksWhileGrading(self):        # arrivals meanwhile: queued, shown with their waits
                run = _run(self.course, lessons, students, False, True, False, self.sandboxed, False, self.pools,
                           self._quiet, narrow=True)
            self.class_files.add(run)
        except SelectionError as exc:      # these submissions', not the service's: the next ones are served
            for arrival, decision in to_grade:
                self._failed(arrival, decision, str(exc))
            return
        except CourseError:
            for arrival, _ in to_grade:
                self.queue.put_back(arrival)
            raise
        except Exception as exc:           # not a submission's doing: named on each, never silent
            for arrival, decision in to_grade:
                self._failed(arrival, decision, f"the grading run failed: {type(exc).__name__}: {exc}")
            return
        if run.interrupted or run.cluster_lost:
            for arrival, _ in to_grade:
                if arrival.key not in run.graded:
                    self.queue.put_back(arrival)
            if run.cluster_lost:           # journalled as begun: the next start takes them up again
                raise CourseError(f"the grading service stops: the Dask cluster went away ({run.cluster_lost}); "
                                  "the submissions being graded are graded at the next start")
            raise KeyboardInterrupt
        for arrival, decision in to_grade:
            self._finish(arrival, decision, run)
            best_attempt.discard(self.snapshots.pop(arrival.key, None))

    def _off_roster(self, students):
        """Those of ``students`` the roster keeps apart (``store.roster``, as make grade decides)."""
        from nbgrader.api import Gradebook

        with Gradebook(self.course.db_url, self.course.course_id) as gb:
            enrolled = rosters.enrolled(gb)
        return rosters.kept_apart(self.course.config, enrolled, set(students), rosters.from_submissions(self.course.root))

    def snapshot_folder(self, arrival):
        """Where the best attempt is kept while ``arrival`` is graded (kept across a restart)."""
        return self.course.root / "history" / arrival.student / arrival.lesson / ".best-before-grading"

    def _keep_best(self, arrival, kept):
        """Put the better attempt ``kept`` back, and the class's grade files after it."""
        best_attempt.restore(self.course.root, self.course.db_url, self.course.course_id, kept)
        self.class_files.before_grading()
        self.class_files.add(_run(self.course, [arrival.lesson], [arrival.student], False, True, False, self.sandboxed,
                                  True, self.pools, self._quiet, narrow=True))

    def _kept(self, arrival):
        return self.course.root / "history" / arrival.student / arrival.lesson / "submissions" / arrival.inbound

    def _begin(self, arrival):
        """Journal ``arrival``; answer it at once when it is not to be graded (None), else collect
        it and return the attempt's ``Decision``."""
        before = [e for e in self.history.graded(arrival.student, arrival.lesson) if e["inbound"] != arrival.inbound]
        decision = decide(self.limits, arrival.lesson, arrival.arrived, before)
        self.history.begin(arrival.student, arrival.lesson, arrival.inbound, arrival.arrived)
        source = os.path.join(self.collect.inbound_path, arrival.inbound)
        try:
            if not decision.grade:
                keep(self.collect, source, self._kept(arrival))
                self._notice(arrival, attempt_banner(decision))
                facts = {"reason": decision.reason}
                if decision.next_possible is not None:
                    facts["next_possible"] = decision.next_possible.isoformat(timespec="seconds")
                self._done(arrival, "refused", decision, **facts)
                return None
            if self.limits.keep == "best":        # what the course holds now, before collect replaces it
                self.snapshots[arrival.key] = best_attempt.snapshot(
                    self.course.root, self.course.db_url, self.course.course_id, arrival.student, arrival.lesson,
                    self.snapshot_folder(arrival))
            collect_one(self.course.config, arrival, self._kept(arrival))
            return decision
        except Exception as exc:             # this submission's trouble alone
            self._failed(arrival, decision, f"{type(exc).__name__}: {exc}")
            return None
        finally:
            if decision.grade is False or arrival.inbound in self.answered:
                best_attempt.discard(self.snapshots.pop(arrival.key, None))

    def _finish(self, arrival, decision, run):
        from nbgrader.api import Gradebook

        key = arrival.key
        if key in run.failed:
            why = run.failed[key]
            if self.snapshots.get(key) is not None:       # keep = "best": the best stays
                try:
                    self._keep_best(arrival, self.snapshots[key])
                except Exception as exc:
                    why += f"; the best attempt could not be put back ({type(exc).__name__}: {exc})"
            return self._failed(arrival, decision, why)
        try:
            with Gradebook(self.course.db_url, self.course.course_id) as gb:
                submission = gb.find_submission(arrival.lesson, arrival.student)
                score, max_score = float(submission.score), float(submission.max_score)
            rendered = key not in {(s, l) for s, l, _ in run.feedback_failures}
            secret = self._kept(arrival) / "submission_secret.txt"
            feedback = self.course.root / "feedback" / arrival.student / arrival.lesson
            ours = rendered and (feedback / "submission_secret.txt").is_file() and \
                (feedback / "submission_secret.txt").read_bytes() == secret.read_bytes()
            best = self.snapshots.get(key)
            worse = best is not None and score < best.score
            banner = attempt_banner(decision, score, max_score, best.score if worse else None)
            if ours:
                page = release_one(self.course.config, arrival.student, arrival.lesson)
                text = with_banner(page.read_text(), banner)
                write_atomically(page, text)
                copy = self._kept(arrival).parent.parent / "feedback" / f"{arrival.inbound}.html"
                copy.parent.mkdir(parents=True, exist_ok=True)
                write_atomically(copy, text)         # every attempt's page, beside its files
            else:
                self._notice(arrival, banner, "Your feedback page could not be made; your instructor has been told.")
                self.failures.append(f"{arrival.student}/{arrival.lesson}: graded, but its feedback page could not be made")
            if worse:
                self._keep_best(arrival, best)
        except Exception as exc:
            import traceback

            self._quiet(traceback.format_exc())      # for the instructor: grading-report/service.log
            return self._failed(arrival, decision, f"after grading: {type(exc).__name__}: {exc}")
        facts = {"kept": f"the best attempt ({best.score:g})"} if worse else {}
        self._done(arrival, "graded", decision, score=score, max_score=max_score, **facts)

    def _notice(self, arrival, banner, detail=""):
        page = outbound_page(self.course.config, self._kept(arrival), arrival.lesson)
        write_atomically(page, notice_page(arrival.lesson, banner, detail))

    def _failed(self, arrival, decision, why):
        self.failures.append(f"{arrival.student}/{arrival.lesson} ({arrival.inbound}): {why}")
        try:
            self._notice(arrival, attempt_banner(decision), f"This attempt could not be graded: {why}")
        except Exception:
            pass                          # nothing kept to name the page by: the journal says why
        self._done(arrival, "failed", decision, reason=why)

    def _done(self, arrival, state, decision, **facts):
        best_attempt.discard(self.snapshots.pop(arrival.key, None))
        self.history.finish(arrival.student, arrival.lesson, arrival.inbound, state,
                            attempt=decision.attempt if state != "refused" else None, **facts)
        self.answered.add(arrival.inbound)
        self.queue.done(arrival)
        seconds = (utc_now() - arrival.arrived.replace(tzinfo=datetime.timezone.utc)).total_seconds()
        self.latest.append({"student": arrival.student, "lesson": arrival.lesson, "inbound": arrival.inbound,
                            "attempt": decision.attempt, "state": state, "score": facts.get("score"),
                            "max_score": facts.get("max_score"), "seconds": seconds})
        self.latest = self.latest[-200:]
        self.show()

    def status(self):
        return {"state": self.state, "pid": os.getpid(), "updated": utc_now().isoformat(timespec="seconds"),
                "watching": self.watcher.how, "queue": len(self.queue),
                "in_flight": [f"{a.student}/{a.lesson}" for a in self.queue.in_flight.values()],
                "waits": self.queue.waits(), "answered": len(self.answered), "latest": self.latest,
                "failures": self.failures[-50:]}

    def show(self):
        status = self.status()
        write_status(self.status_path, status)
        table = status_table(status)
        if getattr(self.out, "isatty", lambda: False)():
            self.out.write("\x1b[H\x1b[2J" + table + "\n")
        elif getattr(self, "_shown", None) != table:
            self.out.write(table + "\n\n")
        self._shown = table
        self.out.flush()


def serve(root=None, db_url=None, workers=None, inotify=None, unsandboxed=False, exit_when_idle=False, log=print,
          scheduler=None, insecure_cluster=False):
    """Run the grading service on the course at ``root`` until stopped (or, with
    ``exit_when_idle``, until nothing is left to answer). ``scheduler``: grade on that Dask
    cluster's workers (default: c.DaskCluster.scheduler, else this machine)."""
    course, sandboxed = open_course(root, db_url, unsandboxed, log)
    try:
        with course_lock(course.root, wait=False, log=log):
            check_gradebook(course.db_url, course.course_id, course.root)
            GradebookBackup(config=course.config).make(course.db_url)
            Service(course, sandboxed, workers, inotify, log, scheduler=scheduler,
                    insecure_cluster=insecure_cluster).serve(exit_when_idle)
    except CourseBusy as exc:
        if "grading service" in str(exc):
            raise
        raise CourseBusy(f"the grading service cannot start: {exc}") from None


def _stop_on_sigterm():
    """SIGTERM (a hub stopping the service, ``kill``) stops as Ctrl-C does: after the save in
    progress (``run.lock.deferred_interrupt`` holds Ctrl-C during a save)."""
    # Started in the background by a shell, Python inherits SIGINT ignored: Ctrl-C and SIGTERM
    # must stop the service wherever it was started.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: os.kill(os.getpid(), signal.SIGINT))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=None, help="course folder (default: this course)")
    parser.add_argument("--db-url", default=None, help="gradebook URL (default: nbgrader_config's db_url)")
    parser.add_argument("--workers", type=int, default=None,
                        help="learners graded at once (default: c.GradingService.workers, else GradingRun's)")
    parser.add_argument("--polling", action="store_true",
                        help="look at the inbound folder every c.GradingService.poll_seconds, without inotify")
    parser.add_argument("--exit-when-idle", action="store_true",
                        help="stop once everything in the inbound folder is answered (a catch-up run)")
    parser.add_argument("--unsandboxed", action="store_true",
                        help="grade even where kernels cannot be sandboxed (only for submissions you trust)")
    parser.add_argument("--scheduler", default=None,
                        help="grade on the workers of the Dask scheduler at this address, e.g. tls://HOST:8786, "
                             "with the course's certificates as make grade uses them (default: "
                             "c.DaskCluster.scheduler, from ATTENTION_DASK_SCHEDULER; else this machine)")
    parser.add_argument("--insecure-cluster", action="store_true",
                        help="accept a tcp:// scheduler, neither authenticated nor encrypted")
    args = parser.parse_args(argv)
    import warnings

    environment_tools_on_path()
    warnings.filterwarnings("ignore", module="nbgrader")
    warnings.filterwarnings("ignore", message=".*not in session.*")
    _stop_on_sigterm()
    try:
        serve(args.root, args.db_url, args.workers, False if args.polling else None, args.unsandboxed,
              args.exit_when_idle, scheduler=args.scheduler, insecure_cluster=args.insecure_cluster)
    except CourseError as exc:
        print(str(exc), file=sys.stderr)
        return exc.exit_status
    except KeyboardInterrupt:
        print("\ngrading service stopped: every answered submission is kept; one being graded is taken up "
              "again at the next start.", file=sys.stderr)
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
