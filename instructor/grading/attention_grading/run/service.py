"""The grading service's parts that are not grading: its settings, the attempt rules, the
exchange's two moves for one submission (collect it, release its feedback), the page a learner
gets when an attempt is not graded, and the live table.

Grading itself is ``make grade``'s (``cli.serve`` calls its plan, run, store and publish for the
submissions it takes up); nothing here decides a score.
"""
import datetime
import html
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from traitlets import Bool, Dict, Enum, Float, Int, Unicode
from traitlets.config import Configurable

from .. import paths


class GradingService(Configurable):
    """``make serve-grading``'s settings (``c.GradingService.<name>``)."""

    inotify = Bool(True, help="Watch the exchange's inbound folder with inotify (watchdog); off: look "
                   "every poll_seconds only (a network file system that sends no events).").tag(config=True)
    poll_seconds = Float(5.0, help="Seconds between two looks at the inbound folder (with inotify, a "
                         "look also follows every change there).").tag(config=True)
    settle_seconds = Float(1.0, help="Seconds a submission's folder must stay unchanged, its last file "
                           "written, before it is collected.").tag(config=True)
    workers = Int(0, help="Learners graded at once (0: GradingRun.workers, else one per core); one "
                  "submission per learner at a time.").tag(config=True)
    status_file = Unicode("grading-report/service-status.json", help="Where the live table is written "
                          "(relative to the course), as JSON and, beside it, as text (.txt).").tag(config=True)


class AttemptLimits(Configurable):
    """How often a learner may be graded by the service (``c.AttemptLimits.<name>``); per lesson,
    by lesson id, else the default."""

    max_attempts = Int(0, help="Graded attempts per lesson (0: no limit); an attempt over it is kept "
                       "(history/<student>/<lesson>/submissions/) but not graded.").tag(config=True)
    max_attempts_by_lesson = Dict(help="{lesson id: graded attempts} overriding max_attempts for those "
                                  "lessons.").tag(config=True)
    cooldown_seconds = Float(0.0, help="Seconds between two graded attempts of one lesson (counted from "
                             "when the previous one was handed in); one sooner is kept, not graded, and "
                             "its page says when the next is possible.").tag(config=True)
    cooldown_seconds_by_lesson = Dict(help="{lesson id: seconds} overriding cooldown_seconds for those "
                                      "lessons.").tag(config=True)
    keep = Enum(["latest", "best"], default_value="latest", help="Which attempt the gradebook holds: the "
                "latest graded one (as make grade keeps the latest collected submission), or the best "
                "(a new attempt that scores less is kept in the history; the best one's grades, files "
                "and page are put back).").tag(config=True)

    def limit(self, lesson):
        return int(self.max_attempts_by_lesson.get(lesson, self.max_attempts))

    def cooldown(self, lesson):
        return float(self.cooldown_seconds_by_lesson.get(lesson, self.cooldown_seconds))


@dataclass
class Decision:
    grade: bool
    attempt: int                   # the number this attempt has (or would have) among graded ones
    limit: int                     # 0: none
    reason: str = ""
    next_possible: object = None   # datetime (UTC) when a refused learner may try again, or None


def _aware(moment):
    return moment.replace(tzinfo=datetime.timezone.utc) if moment.tzinfo is None else moment


def decide(limits, lesson, arrived, graded_before):
    """Whether an attempt handed in at ``arrived`` is graded, given the entries of the attempts
    graded before it (``ServiceHistory.graded``, oldest first)."""
    limit, cooldown = limits.limit(lesson), limits.cooldown(lesson)
    number = len(graded_before) + 1
    if limit and number > limit:
        return Decision(False, number, limit, f"the limit of {limit} graded attempt(s) for this lesson is reached")
    if cooldown and graded_before:
        previous = datetime.datetime.fromisoformat(graded_before[-1]["arrived"])
        next_possible = previous + datetime.timedelta(seconds=cooldown)
        if _aware(arrived) < next_possible:
            return Decision(False, number, limit, f"it came less than {cooldown:g} s after the previous "
                            "graded attempt", next_possible)
    return Decision(True, number, limit)


# -- the exchange, for one submission -----------------------------------------------------------

def exchange_parts(config):
    """(CourseDirectory, Authenticator, ExchangeFactory) of the course's configuration."""
    from nbgrader.auth import Authenticator
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.exchange import ExchangeFactory

    return CourseDirectory(config=config), Authenticator(config=config), ExchangeFactory(config=config)


def collector(config, lesson="*"):
    """The course's ``collect`` (``OwnedCollect``) with its source read, not run."""
    coursedir, authenticator, factory = exchange_parts(config)
    coursedir.assignment_id = lesson
    collect = factory.Collect(coursedir=coursedir, authenticator=authenticator, config=config)
    collect.update = True
    collect.init_src()
    return collect


def collect_one(config, arrival, keep_in):
    """Collect exactly ``arrival`` into ``submitted/`` as ``nbgrader collect --update`` does (the
    course's ``OwnedCollect``), and keep a copy of what was handed in under ``keep_in``."""
    collect = collector(config, arrival.lesson)
    path = os.path.join(collect.inbound_path, arrival.inbound)
    record = collect._path_to_record(path)
    if "refused" in record:
        raise ValueError(f"not collected: {record['refused']}")
    keep(collect, path, keep_in)
    collect.src_records = [record]
    collect.copy_files()


def keep(collect, path, keep_in):
    """A copy of the submission at ``path`` (its regular files, as collect takes them) in
    ``keep_in``, made whole in a scratch folder beside it and renamed into place."""
    keep_in = Path(keep_in)
    if keep_in.exists():
        return
    keep_in.parent.mkdir(parents=True, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix=".keep-", dir=keep_in.parent)
    try:
        collect.do_copy(path, os.path.join(scratch, "copy"))
        os.replace(os.path.join(scratch, "copy"), keep_in)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def release_one(config, student, lesson):
    """``nbgrader release_feedback <lesson> --student <student>``; the released page's path."""
    from nbgrader.utils import notebook_hash

    coursedir, authenticator, factory = exchange_parts(config)
    coursedir.assignment_id, coursedir.student_id = lesson, student
    release = factory.ReleaseFeedback(coursedir=coursedir, authenticator=authenticator, config=config)
    release.start()
    folder = Path(coursedir.format_path(coursedir.feedback_directory, student, lesson))
    secret = (folder / "submission_secret.txt").read_text()
    return Path(release.dest_path) / f"{notebook_hash(secret=secret, notebook_id=lesson)}.html"


def outbound_page(config, kept, lesson):
    """Where the exchange keeps the feedback page of the submission kept at ``kept`` (nbgrader's
    name for it: its notebook's hash under the submission's secret), making the folder."""
    from nbgrader.utils import notebook_hash

    coursedir, authenticator, factory = exchange_parts(config)
    release = factory.ReleaseFeedback(coursedir=coursedir, authenticator=authenticator, config=config)
    release.init_dest()
    secret = (Path(kept) / "submission_secret.txt").read_text()
    return Path(release.dest_path) / f"{notebook_hash(secret=secret, notebook_id=lesson)}.html"


def write_atomically(path, text):
    """A page or a status file, whole or not at all, readable by the exchange's learners."""
    paths.write_atomically(path, text, mode=0o644)


def attempt_banner(decision, score=None, max_score=None, kept_score=None):
    """One paragraph: the attempt's number and the limit (and when a refused one may try again;
    the score the gradebook keeps when it keeps a better attempt)."""
    limit = f" of {decision.limit}" if decision.limit else ""
    words = f"Attempt {decision.attempt}{limit}"
    if score is not None:
        words += f": graded, {score:g} / {max_score:g} points."
        if kept_score is not None:
            words += f" Your grade stays that of your best attempt: {kept_score:g} / {max_score:g} points."
    elif not decision.grade:
        words = f"This attempt was received and kept, but not graded: {decision.reason}."
        if decision.next_possible is not None:
            words += f" Your next attempt can be graded from {decision.next_possible:%Y-%m-%d %H:%M:%S} UTC."
        elif decision.limit:
            words += " Ask your instructor if you need another attempt."
    return f'<p class="attention-attempt"><strong>{html.escape(words)}</strong></p>'


def with_banner(page, banner):
    """The feedback page ``page`` (HTML) with ``banner`` first in its body."""
    at = page.find("<body")
    if at < 0:
        return banner + page
    end = page.find(">", at) + 1
    return page[:end] + "\n" + banner + page[end:]


def notice_page(lesson, banner, detail=""):
    """A feedback page for an attempt the service did not grade (or could not)."""
    extra = f"<p>{html.escape(detail)}</p>" if detail else ""
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
            f"<title>{html.escape(lesson)}: feedback</title></head><body>\n"
            f"<h1>{html.escape(lesson)}</h1>\n{banner}\n{extra}\n</body></html>\n")


# -- the live table -------------------------------------------------------------------------------

def status_table(status):
    """The live table, as text."""
    lines = [f"grading service: {status['state']}   watching: {status['watching']}   "
             f"queue: {status['queue']}   in flight: {len(status['in_flight'])}   "
             f"answered: {status['answered']}   failures: {len(status['failures'])}"]
    if status["waits"]:
        lines.append("waiting: " + ", ".join(f"{s} {w:.0f} s" for s, w in sorted(status["waits"].items())))
    if status["in_flight"]:
        lines.append("grading: " + ", ".join(status["in_flight"]))
    if status["latest"]:
        lines.append(f"{'learner':<24} {'lesson':<26} {'attempt':>7} {'result':<10} {'score':>11} {'seconds':>8}")
        for row in status["latest"][-10:]:
            score = f"{row['score']:g}/{row['max_score']:g}" if row.get("score") is not None else ""
            lines.append(f"{row['student']:<24} {row['lesson']:<26} {row['attempt']:>7} {row['state']:<10} "
                         f"{score:>11} {row['seconds']:>8.1f}")
    for failure in status["failures"][-5:]:
        lines.append(f"failed: {failure}")
    return "\n".join(lines)


def write_status(path, status):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, json.dumps(status, indent=1, default=str))
    write_atomically(path.with_suffix(".txt"), status_table(status) + "\n")
