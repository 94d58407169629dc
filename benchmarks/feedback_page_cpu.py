"""What a feedback page costs a worker: the page as plain ``nbgrader generate_feedback`` renders
it, as feedback jobs did before issue 40 (a new ``GenerateFeedback`` and exporter per page: its
Jinja template compiled again, nbconvert's ``HTMLExporter`` parsing its own page once more with
BeautifulSoup, pygments and the Markdown parser on every cell, nbgrader's ``GetGrades`` querying
the course gradebook cell by cell) against today's ``run.feedback_jobs.run_feedback`` (one
exporter per worker process, one parse, highlighted code and Markdown kept per process, the
grades read once by the grader's process and carried by the job: no gradebook in the worker),
side by side in one process, on the same autograded notebooks.

Builds the synthetic class of benchmarks/grading_speed.py (default 3 learners × lessons 01-06:
correct, buggy, blank), grades it with `make grade --no-feedback` (not measured), then renders
every page ``--rounds`` times each way, alternating, and prints the CPU seconds
(``time.process_time``) per page of each, and the ratio. The first page of each way is rendered
before measuring (imports). The pages of both ways are compared: they must differ only in the
``alt`` and ``tabindex`` attributes stock's second parse added (the new way writes ``alt``
itself): the same scores, maximum scores, comments and penalty. Not a timed test.

Usage: python benchmarks/feedback_page_cpu.py [--learners 3] [--lesson ID ...] [--rounds 2] [--keep]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "instructor" / "grading"))
sys.path.insert(0, str(REPO / "benchmarks"))

from grading_speed import build, env_for  # noqa: E402

LESSONS = ["01_context_vectors", "02_queries_keys_values", "03_scaling", "04_causal_masking",
           "05_gradients", "06_multi_head"]


def old_run_feedback(job, db_url):
    """A page as plain ``nbgrader generate_feedback`` renders it, as feedback jobs did before
    issue 40: stock ``GenerateFeedback`` making its exporter for this page (its template compiled
    again), ``HTMLExporter.from_notebook_node`` (its BeautifulSoup pass), no caches, and nbgrader's
    ``GetGrades`` (and the course's ``LabelGradedCells``) reading the course gradebook ``db_url``."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.converters import GenerateFeedback

    from attention_grading.run.feedback_jobs import coursedir_for
    from attention_grading.store.pages import learner_files
    from attention_grading.run.feedback_jobs import FeedbackOutcome
    from attention_grading.steps import csp, feedback_exporter
    from attention_grading.steps.maths import markdown_with_mathml

    class OldExporter(feedback_exporter.FeedbackExporter):
        def markdown2html(self, context, source):
            cell = context.get("cell", {})
            return markdown_with_mathml(
                source, attachments=cell.get("attachments", {}), embed_images=self.embed_images,
                path=context.get("resources", {}).get("metadata", {}).get("path", ""),
                anchor_link_text=self.anchor_link_text, exclude_anchor_links=self.exclude_anchor_links,
                **self.lexer_options)
        markdown2html = feedback_exporter.pass_context(markdown2html)

        def from_notebook_node(self, nb, resources=None, **kw):
            page, resources = HTMLExporter.from_notebook_node(self, nb, resources, **kw)
            return csp.with_meta(page), resources

    scratch = Path(tempfile.mkdtemp(prefix="feedback-page-cpu-stock-"))
    try:
        folder = scratch / "autograded" / job.student / job.lesson
        folder.mkdir(parents=True)
        for name, data in job.autograded.items():
            (folder / name).write_bytes(data)
        config, coursedir = coursedir_for(job.config, scratch, db_url, job.lesson, job.student)
        converter = GenerateFeedback(coursedir=coursedir, config=config)
        converter.exporter_class, converter.force = OldExporter, True
        here = os.getcwd()
        os.chdir(scratch)
        try:
            converter.start()
        finally:
            os.chdir(here)
        return FeedbackOutcome(True, learner_files(scratch / "feedback" / job.student / job.lesson, job.lesson))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def jobs_of(root):
    """A feedback job for every autograded submission, as ``make grade`` makes them (its grades
    read from the course gradebook here, ``cli.publish.PageJobs``)."""
    from nbgrader.api import Gradebook

    from attention_grading.cli.publish import PageJobs
    from attention_grading.run.plan import open_course
    from attention_grading.store import standing as standings

    course, _ = open_course(root, None, True, lambda *line: None)
    page_jobs = PageJobs(None, course)
    jobs = []
    with Gradebook(course.db_url, course.course_id) as gb:
        for folder in sorted((root / "autograded").glob("*/*")):
            student, lesson = folder.parts[-2:]
            jobs.append(page_jobs.job(gb, student, lesson, standings.read(gb, lesson, student)))
    return jobs


def page(outcome, job):
    return outcome.feedback[f"{job.lesson}.html"].decode()


def without_added_attributes(html):
    """A page as the sequence of its tags (less the attributes BeautifulSoup's pass adds) and
    texts (whitespace folded; a class's list of names as BeautifulSoup writes it): how it is written out (``<br/>`` or ``<br />``) aside."""
    from html.parser import HTMLParser

    events = []

    class Reader(HTMLParser):
        def handle_starttag(self, tag, attrs):
            events.append((tag, sorted((k, " ".join((v or "").split()) if k == "class" else v)
                                       for k, v in attrs if k not in ("alt", "tabindex"))))

        def handle_endtag(self, tag):
            events.append(("/" + tag,))

        def handle_data(self, data):
            if data.strip():
                events.append(re.sub(r"\s+", " ", data.strip()))

    Reader(convert_charrefs=True).feed(html)
    return events


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=int, default=3)
    parser.add_argument("--lesson", action="append", default=None)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args(argv)
    from attention_grading.run.feedback_jobs import run_feedback

    warnings.filterwarnings("ignore")
    lessons = args.lesson or LESSONS
    folder = Path(tempfile.mkdtemp(prefix="feedback-page-cpu-"))
    root = folder / "course"
    try:
        kinds = build(root, lessons, args.learners)
        for lesson in lessons:
            subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", lesson, "--force"],
                           cwd=root, env=env_for(root), capture_output=True, check=True)
        subprocess.run([sys.executable, "-m", "attention_grading.cli.grade", "--root", str(root),
                        "--no-feedback", "--no-report"], cwd=root, env=env_for(root), capture_output=True)
        jobs = jobs_of(root)
        db_url = f"sqlite:///{root / 'gradebook.db'}"
        stock = lambda job: old_run_feedback(job, db_url)        # noqa: E731
        stock(jobs[0]), run_feedback(jobs[0])          # imports, before measuring
        cpu = {"old": 0.0, "new": 0.0}
        pages = {}
        for _ in range(args.rounds):
            for name, render in (("old", stock), ("new", run_feedback)):
                for job in jobs:
                    started = time.process_time()
                    outcome = render(job)
                    cpu[name] += time.process_time() - started
                    assert outcome.ok, outcome.message
                    pages[name, job.key] = page(outcome, job)
        count = len(jobs) * args.rounds
        same = all(without_added_attributes(pages["old", j.key]) == without_added_attributes(pages["new", j.key])
                   for j in jobs)
        print(f"class: {args.learners} learners x {len(lessons)} lessons ({sorted(set(kinds.values()))}); "
              f"{len(jobs)} pages, each rendered {args.rounds} times each way")
        print(f"stock generate_feedback (an exporter per page, BeautifulSoup pass, no caches, GetGrades on the "
              f"gradebook): {cpu['old'] / count:.3f} CPU-s per page")
        print(f"now (an exporter per worker, one parse, caches, the grades carried by the job, no gradebook): "
              f"{cpu['new'] / count:.3f} CPU-s per page")
        print(f"ratio before / now: {cpu['old'] / max(cpu['new'], 1e-9):.1f}x   (target: now <= 0.1 CPU-s a page)")
        print(f"pages the same as stock's but for alt/tabindex attributes: {same}")
        return 0 if same else 1
    finally:
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
