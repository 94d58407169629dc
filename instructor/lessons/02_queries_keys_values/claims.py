"""Lesson 02's claims in words and the computed values that back them (tests/test_lesson_text.py):
``[(words of the prose, an expression over the notebook's variables)]``. The words must stay in the
lesson, and the expression must hold when the notebook runs."""
CLAIMS = [
    ("Position 2 gives a quarter of its attention to each of positions 1 and 2 and half to position 3",
     "np.allclose(A[1], [0.25, 0.25, 0.5], atol=0.01)"),
]
