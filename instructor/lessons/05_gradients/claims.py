"""Lesson 05's claims in words and the computed values that back them (tests/test_lesson_text.py):
``[(words of the prose, an expression over the notebook's variables)]``. The words must stay in the
lesson, and the expression must hold when the notebook runs."""
CLAIMS = [
    ("once they are nearly one-hot the typical\ngradient reaching the scores collapses by orders of\nmagnitude",
     "results['unscaled'][-1] < results['scaled by 1/√d_k'][-1] / 100"),
    ("At\nsmall widths it does not", "results['unscaled'][0] >= results['scaled by 1/√d_k'][0] / 2"),
    ("With the scale, the gradient reaching the scores stays the same size whatever the width",
     "max(results['scaled by 1/√d_k']) < 2 * min(results['scaled by 1/√d_k'])"),
]
