"""Lesson 06's claims in words and the computed values that back them (tests/test_lesson_text.py):
``[(words of the prose, an expression over the notebook's variables)]``. The words must stay in the
lesson, and the expression must hold when the notebook runs."""
CLAIMS = [
    ("With $\\sqrt{d_{model}}$, 32 heads start almost\nflat", "peak_wrong[-1] < 2 / T_s < peak_right[-1]"),
]
