"""Lesson 07's claims in words and the computed values that back them (tests/test_lesson_text.py):
``[(words of the prose, an expression over the notebook's variables)]``. The words must stay in the
lesson, and the expression must hold when the notebook runs."""
CLAIMS = [
    ("the gradient of `W_Q` is *not* smaller",
     "w_q_gradient['d_k = 128, no √d_k'] > w_q_gradient['d_k = 128, scaled']"),
    ("the unscaled run learns more slowly than\nits scaled twin",
     "results['d_k = 128, no √d_k']['steps to 90 %'] is None or "
     "results['d_k = 128, no √d_k']['steps to 90 %'] > results['d_k = 128, scaled']['steps to 90 %']"),
    ("the matching item outscores the query's key in\nmost sequences", "outscores > 0.5"),
    ("far more than the untied baseline",
     "results['tied W_Q = W_K']['on itself'] > 10 * results['baseline (d_k = 16)']['on itself']"),
    ("and less on the answer item",
     "results['tied W_Q = W_K']['on answer item'] < results['baseline (d_k = 16)']['on answer item']"),
    ("larger weight than any other token in nearly every held-out sequence", "largest_share > 0.95"),
    ("the size of its read grows with the number of tokens",
     "read_size[2][1] < read_size[5][1] < read_size[8][1]"),
    ("about the same size for 2, 5 or 8 items",
     "max(v[0] for v in read_size.values()) < 1.2 * min(v[0] for v in read_size.values())"),
    ("Practically all of its attention goes to the next token", "A_leak[:, q, q + 1].mean() > 0.95"),
    ("roughly what a guess from the colours\non show achieves", "abs(leaky['held-out accuracy'] - most_common) < 0.1"),
    ("`W_Q` and `W_K` did not move at all", "moved['W_Q'] == 0 and moved['W_K'] == 0"),
    ("many times what\nthe untied baseline keeps",
     "results['tied W_Q = W_K']['on itself'] > 10 * results['baseline (d_k = 16)']['on itself']"),
]
