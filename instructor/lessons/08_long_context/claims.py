"""Lesson 08's claims in words and the computed values that back them (tests/test_lesson_text.py):
``[(words of the prose, an expression over the notebook's variables)]``. The words must stay in the
lesson, and the expression must hold when the notebook runs."""
CLAIMS = [
    ("The memory slope is 2 almost exactly", "abs(memory_slope - 2) < 0.1"),
    ("the tiled lines\nstay far below it",
     "all(tiled_peak[B][-1] < full_peak[-1] / 5 for B in block_sizes)"),
    ("its working memory is set\nby the block size and stays flat in $T$",
     "all(abs(np.polyfit(np.log(lengths[-3:]), np.log(tiled_peak[B][-3:]), 1)[0]) < 0.3 for B in block_sizes)"),
    ("hundreds to thousands of times the cached step", "100 < cache_saves[1000] < cache_saves[128000] < 10_000"),
]
