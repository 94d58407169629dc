"""Every grading setting, in one list: the configurable classes whose traits (with their help
text) are the course's settings, set in ``nbgrader_config.py`` as ``c.<Class>.<name> = value``.

``python -m attention_grading.cli.settings`` prints them as the Markdown table the documentation's
settings page (``docs/settings.md``) holds between ``<!-- settings:start -->`` and
``<!-- settings:end -->``; ``--write docs/settings.md`` puts it there (``make docs`` does, and a
test fails when the page's copy is stale).
"""
import argparse
import re
import sys
from pathlib import Path


def configurables():
    """The classes that hold the course's grading settings, in the order a run meets them."""
    from ..run.cluster import DaskCluster
    from ..run.cluster_tls import ClusterTLS
    from ..steps.execute import GuardedExecute
    from .export import CourseGradesExport
    from ..steps.figure_outputs import FigureOutputs
    from .formgrader import FormgraderCSP
    from .grade import GradingRun
    from ..hidden.conversation import ConversationLimits
    from ..run.intake import IntakeLimits
    from ..run.backups import GradebookBackup
    from ..store.roster import Roster
    from ..run.service import AttemptLimits, GradingService

    return [GradingRun, GradebookBackup, Roster, IntakeLimits, GuardedExecute, ConversationLimits, DaskCluster,
            ClusterTLS, FigureOutputs, CourseGradesExport, FormgraderCSP, GradingService, AttemptLimits]


def sandbox_limits(config):
    """[(name, value, help)] of the sandbox's limits (``sandbox.limits.Limits``, a dataclass of the
    standard library: the sandbox also runs in a bare Python), with ``config``'s values
    (``c.GuardedExecute.sandbox_limits``)."""
    import dataclasses

    from ..kernels.sandbox.limits import Limits

    values = Limits(**dict(config.GuardedExecute.get("sandbox_limits", {}) or {}))
    return [(f.name, getattr(values, f.name), f.metadata["help"]) for f in dataclasses.fields(Limits)]


def _course_settings(cls):
    """The configurable traits a class declares itself (GuardedExecute's own, not nbgrader's)."""
    own = cls.class_own_traits(config=True)
    return [(name, own[name]) for name in sorted(own)]


def _value(value):
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int) and value >= 1 << 20 and value % (1 << 20) == 0:
        return f"{value >> 30} GiB" if value % (1 << 30) == 0 else f"{value >> 20} MiB"
    if isinstance(value, float) and value.is_integer():
        return f"{value:g}"
    return f"{value!r}" if isinstance(value, str) else f"{value:,}" if isinstance(value, int) else str(value)


def markdown(config=None):
    """The settings tables: the course's own settings (one row each: its value in ``config``, by
    default the course's nbgrader_config.py, and its help), then the other classes' settings the
    course's configuration sets (nbgrader's, nbclient's)."""
    from ..course import load_config

    config = load_config() if config is None else config
    ours = {cls.__name__ for cls in configurables()}
    rows = ["| setting | here | what it is |", "|---|---|---|"]
    for cls in configurables():
        instance = cls(config=config)
        for name, trait in _course_settings(cls):
            help_text = " ".join(trait.help.split()).replace("|", "\\|")
            rows.append(f"| `{cls.__name__}.{name}` | {_value(getattr(instance, name))} | {help_text} |")
        if cls.__name__ == "GuardedExecute":
            rows += [f"| `GuardedExecute.sandbox_limits[{name!r}]` | {_value(value)} | {help_text} |"
                     for name, value, help_text in sandbox_limits(config)]
    others = [(section, name, value) for section, values in sorted(config.items()) if section not in ours
              and section[:1].isupper() for name, value in sorted(values.items())
              if isinstance(value, (int, float, bool)) and not isinstance(value, dict)]
    rows += ["", "Set by the course on nbgrader's own steps:", "", "| setting | here |", "|---|---|"]
    rows += [f"| `{section}.{name}` | {_value(value)} |" for section, name, value in others]
    return "\n".join(rows)


BLOCK = re.compile(r"(<!-- settings:start -->\n)(?:.*?\n)?(<!-- settings:end -->)", re.DOTALL)


def with_table(text):
    """``text`` (a Markdown page) with its settings block replaced by the current table."""
    if not BLOCK.search(text):
        raise ValueError("no <!-- settings:start --> ... <!-- settings:end --> block")
    return BLOCK.sub(lambda m: m.group(1) + markdown() + "\n" + m.group(2), text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", metavar="FILE", help="replace the settings block of this file (docs/settings.md)")
    args = parser.parse_args(argv)
    if args.write:
        path = Path(args.write)
        path.write_text(with_table(path.read_text()))
    else:
        print(markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main())
