"""What lesson 08's memory judgement reads, per answer style, in real grading kernels: each answer is
graded by ``make grade`` (``attention_grading.cli.grade``) in a scratch copy of the course, one
submission per draw (a comment in the answer changes the draw), and a copy of the spec in that
scratch course writes down the figures ``judge_memory`` reads. It prints, per style and draw, for
the short and the long length: the length, what the warm-up call took, what the full and the causal
call took (MB, the most the sandbox took since its kernel's meter started); then what the judge
makes of them: the growth beyond proportion to T and its limit (half of what a T × T array of
booleans adds beyond proportion between the two lengths), the causal call's excess over the full
one at the long length and its limit (half a T × T array of booleans), and the points. Not a
timed test: run it idle and under load (``/work/shared/tools/with-cpu-load 2 -- ...``) to see
the margin.

Usage: python benchmarks/tiled_memory_growth.py [--draws 3] [--styles solution,key_blocks_only,...]
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lesson08_styles import LESSON, graded_figures, options  # noqa: E402  (puts tests/ and the grader on sys.path)

#: The line of ``judge_memory`` after which every length's figures are known.
LOGGED = "    figures, warm_ups = found\n"


def answers():
    import catalogue

    module = catalogue.load(LESSON)
    return {"solution": None, **module.CORRECT["tiled_attention"],
            **{name: source for name, source in module.WRONG["tiled_attention"].items()
               if name in ("builds_full_score_matrix", "builds_full_causal_mask", "builds_causal_mask_by_comparison",
                           "builds_mask_of_every_pair")}}


def _judged(row):
    """One logged row (the four figures, then each length and its warm-up) as the judge reads it."""
    from attention_grading.hidden.specs import lesson08_long_context as spec

    short_full, short_causal, long_full, long_causal, (short, warm_short), (long, warm_long) = row
    own_short = max(short_full, short_causal) - min(warm_short, spec.WARM_UP_CAP)
    own_long = max(long_full, long_causal) - min(warm_long, spec.WARM_UP_CAP)
    growth = own_long - min(long / short * max(own_short, 1), spec.CREDIT_CAP * long * long)
    return (f"{short:>5} {warm_short / 1e6:>5.2f} {short_full / 1e6:>6.2f} {short_causal / 1e6:>6.2f} {long:>5} "
            f"{warm_long / 1e6:>5.2f} {long_full / 1e6:>6.2f} {long_causal / 1e6:>6.2f} {growth / 1e6:>6.2f} "
            f"{long * (long - short) / 2e6:>6.2f} {(long_causal - long_full) / 1e6:>6.2f} {long * long / 2e6:>6.2f}")


def logging_line(log):
    """The line the scratch spec gets after ``LOGGED``: the judge's figures, one JSON line to ``log``."""
    return (f"    open({str(log)!r}, 'a').write(__import__('json').dumps("
            "[figures[T, causal] for T in sorted(warm_ups) for causal in (False, True)] + "
            "[[T, warm_ups[T]] for T in sorted(warm_ups)]) + '\\n')\n")


def main():
    known = answers()
    chosen = options(__doc__, known)
    print(f"{'style':<32} {'short':>5} {'warm':>5} {'full':>6} {'causal':>6} {'long':>5} {'warm':>5} {'full':>6} "
          f"{'causal':>6} {'growth':>6} {'limit':>6} {'mask':>6} {'limit':>6} {'points':>6}   (MB)")
    for style, figures, points in graded_figures("attention-tiled-growth-", LOGGED, logging_line, known,
                                                 chosen.styles.split(","), chosen.draws,
                                                 "judge_memory changed: update this benchmark"):
        for row in figures:
            print(f"{style:<32} {_judged(row)} {points:>6}", flush=True)
        if not figures:
            print(f"{style:<32} (no figures: the cases failed first) points {points}", flush=True)


if __name__ == "__main__":
    main()
