"""Lesson 01's claims in words and the computed values that back them (tests/test_lesson_text.py):
``[(words of the prose, an expression over the notebook's variables)]``. The words must stay in the
lesson, and the expression must hold when the notebook runs."""
CLAIMS = [
    ("*cat* puts most of its\nattention on its own vector", "A_four[0].argmax() == 0 and A_four[0, 0] > 0.5"),
    ("*phone*, which reads only\nitself", "A_four[2, 2] > 0.99"),
    ("*dog* reads *cat* most", "words[int(A_four[1].argmax())] == 'cat'"),
    ("*cat*'s longer vector has a larger dot product with\n*dog*'s than\n*dog*'s own has",
     "X[0] @ X[1] > X[1] @ X[1] and np.linalg.norm(X[0]) > np.linalg.norm(X[1])"),
    ("Most of it goes to\n*bank*, the token with the highest score, but every visible token gets a positive share",
     "tokens[int(np.argmax(scores))] == 'bank' and softmax(scores).max() > 0.5 and (softmax(scores) > 0).all()"),
    ("*cat* spends most of it on itself and\n*dog*; *phone* mostly reads itself",
     "A[0, :2].sum() > 0.5 and A[2, 2] > 0.5"),
]
