# Two commands on a fresh machine: `make lab` and `make test`.
SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin
PYTHON := $(BIN)/python
STAMP := $(VENV)/.installed
# Instructor tools (alembic for the gradebook, nbgrader) come from the course environment.
export PATH := $(abspath $(BIN)):$(PATH)
# JupyterLab refuses to start as root without --allow-root (CI and containers run as root).
ROOT_FLAG := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)
LAB_ARGS ?=
TEST_ARGS ?=
CERT_ARGS ?=
SERVE_ARGS ?=

# GNU make exits 2 whatever a recipe's status was: say the grader's own status first (scripts that
# need it call .venv/bin/attention-grade; docs/instructor-guide.md, "Options and exit statuses").
define real_status
$(2); status=$$?; case $$status in 0) ;; \
  1) echo "make $(1): exit status 1 (not everything could be graded)" >&2 ;; \
  2) echo "make $(1): exit status 2 (refused: an unknown lesson or student, or no course here)" >&2 ;; \
  75) echo "make $(1): exit status 75 (another run holds the course)" >&2 ;; \
  130) echo "make $(1): exit status 130 (stopped by Ctrl-C)" >&2 ;; \
  *) echo "make $(1): exit status $$status" >&2 ;; esac; exit $$status
endef

.PHONY: lab instructor test test-all system-packages release grade feedback serve-grading formgrader new-lesson cluster-certs docs clean

$(STAMP): pyproject.toml constraints.txt instructor/grading/pyproject.toml src/jupyter_config/nbgrader_config.py
	@test -x $(PYTHON) || python3 -m venv $(VENV)
	$(PYTHON) -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(PYTHON) -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[instructor]'
	$(PYTHON) -m pip install --quiet --disable-pip-version-check --no-deps -e instructor/grading
	@# An editable install leaves out the package's data files: the learners' nbgrader configuration.
	install -m 644 -D src/jupyter_config/nbgrader_config.py $(VENV)/etc/jupyter/nbgrader_config.py
	@touch $@

## lab: set up the environment and open JupyterLab on the lessons (notebooks/)
lab: $(STAMP)
	$(BIN)/jupyter lab --notebook-dir=notebooks --ip=127.0.0.1 $(ROOT_FLAG) $(LAB_ARGS)

## instructor: set up the environment for an instructor (the course and its grading tools), opening nothing
instructor: $(STAMP)
	@mkdir -p .exchange
	@echo "Ready: make release, make grade, make formgrader; the term step by step: docs/instructor-guide.md"

## test: the quick tier (under 10 minutes): set up the environment, then every area once (a sample of each catalogue)
test: system-packages $(STAMP)
	$(PYTHON) -m pytest $(TEST_ARGS)

## test-all: the full tier (CI): every catalogue entry, Dask, every browser test, real accounts, PostgreSQL
test-all: system-packages $(STAMP)
	$(PYTHON) -m pytest --full $(TEST_ARGS)

## system-packages: install the Debian packages the tests need, or say which and how (before anything else)
system-packages:
	@bash .ci/check-system-packages

## release: regenerate notebooks/ (learners) and solutions/ from source/
release: $(STAMP)
	@mkdir -p .exchange
	$(PYTHON) -m attention_grading.cli.release

## grade: autograde submitted/ (here, or on a Dask cluster: GRADE_ARGS="--scheduler tls://HOST:8786"), write feedback/, grades.csv and grades-by-learner.csv, print a table per student
grade: $(STAMP)
	@$(call real_status,grade,$(PYTHON) -m attention_grading.cli.grade $(GRADE_ARGS))

## serve-grading: the grading service: grade each submission as it reaches the exchange and release its feedback at once (foreground; Ctrl-C stops; docs/grading-service.md)
serve-grading: $(STAMP)
	@$(call real_status,serve-grading,$(PYTHON) -m attention_grading.cli.serve $(SERVE_ARGS))

## new-lesson: scaffold a lesson (NAME=09_example, FUNCTION=its first graded function): its source notebook and its folder instructor/lessons/<id>/ (spec, reference, catalogue, claims)
new-lesson: $(STAMP)
	$(PYTHON) -m attention_grading.cli.scaffold $(NAME) $(if $(FUNCTION),--function $(FUNCTION))

## feedback: render again the feedback pages whose grades, comments or late penalties changed (after manual grading)
feedback: $(STAMP)
	@$(call real_status,feedback,$(PYTHON) -m attention_grading.cli.grade --feedback-only $(GRADE_ARGS))

## cluster-certs: the Dask cluster's certificate authority and per-role certificates (instructor/cluster-tls/)
cluster-certs: $(STAMP)
	$(PYTHON) -m attention_grading.cli.certs $(CERT_ARGS)

## formgrader: JupyterLab at the course root, for instructors (Nbgrader menu → Formgrader), learner content under a Content-Security-Policy
formgrader: $(STAMP)
	@mkdir -p .exchange
	$(BIN)/jupyter lab --ip=127.0.0.1 $(ROOT_FLAG) --ServerApp.jpserver_extensions=attention_grading.cli.formgrader=True $(LAB_ARGS)

## docs: the documentation site, offline, into docs/_build/html (the settings page written again first; lesson pages run each solution once, cached)
docs: $(STAMP)
	$(PYTHON) -m attention_grading.cli.settings --write docs/settings.md
	$(PYTHON) -m sphinx -W --keep-going -b html docs docs/_build/html

clean:
	rm -rf $(VENV) autograded feedback grades.csv grades-by-learner.csv grading-report gradebook.db .exchange
