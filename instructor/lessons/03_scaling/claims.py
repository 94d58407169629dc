"""Lesson 03's claims in words and the computed values that back them (tests/test_lesson_text.py):
``[(words of the prose, an expression over the notebook's variables)]``. The words must stay in the
lesson, and the expression must hold when the notebook runs."""
CLAIMS = [
    ("its norm first rises", "peak > 0"),
    ("at $d_k = 1024$ the read is nearly one-hot", "curves['unscaled']['max'][-1] > 0.9"),
    ("With the\nscale the three curves are flat",
     "all(max(v) < 1.5 * min(v) for v in curves['scaled by 1/√d_k'].values())"),
]
