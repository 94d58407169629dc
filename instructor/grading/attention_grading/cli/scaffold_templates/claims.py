"""Lesson __NUMBER__'s claims in words and the computed values that back them (tests/test_lesson_text.py):
``[(words of the prose, an expression over the notebook's variables)]``. The words must stay in the
lesson, and the expression must hold when the notebook runs (written by ``make new-lesson``: add
one for every sentence of the lesson that states a number or a comparison its cells compute)."""
CLAIMS = []
