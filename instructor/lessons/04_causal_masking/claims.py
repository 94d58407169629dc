"""Lesson 04's claims in words and the computed values that back them (tests/test_lesson_text.py):
``[(words of the prose, an expression over the notebook's variables)]``. The words must stay in the
lesson, and the expression must hold when the notebook runs."""
CLAIMS = [
    ("Position 2 gives about half of its attention to position 3", "abs(A_full[1, 2] - 0.5) < 0.05"),
    ("The cell plays the $T - 1 = 3$ games whose answer lies in the\nsentence",
     "len(examples.the_cat_sat_it()[-1]) - 1 == 3"),
]
