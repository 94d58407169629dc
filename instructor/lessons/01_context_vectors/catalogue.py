"""Learner answers for lesson 01 (softmax, contextualize)."""
from catalogue import MEASUREMENTS

WRONG = {
    "softmax": {
        "wrong_axis": '''
def softmax(x, axis=-1):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - np.max(x, axis=0, keepdims=True))
    return e / np.sum(e, axis=0, keepdims=True)
''',
        "no_max_subtraction": '''
def softmax(x, axis=-1):
    e = np.exp(np.asarray(x, dtype=float))
    return e / np.sum(e, axis=axis, keepdims=True)
''',
        "global_max": '''
def softmax(x, axis=-1):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - np.max(x))
    return e / np.sum(e, axis=axis, keepdims=True)
''',
        "mutates_input": '''
def softmax(x, axis=-1):
    x -= np.max(x, axis=axis, keepdims=True)
    np.exp(x, out=x)
    x /= np.sum(x, axis=axis, keepdims=True)
    return x
''',
        "ignores_axis": '''
def softmax(x, axis=-1):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)
''',
        "max_without_keepdims": '''
def softmax(x, axis=-1):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - np.max(x, axis=axis))
    return e / np.sum(e, axis=axis)
''',
        "rejects_lists": '''
def softmax(x, axis=-1):
    shifted = x - x.max(axis=axis, keepdims=True)       # a list has no .max: it is not an array yet
    e = np.exp(shifted)
    return e / e.sum(axis=axis, keepdims=True)
''',
        "integer_output_array": '''
def softmax(x, axis=-1):
    x = np.asarray(x)
    out = np.empty_like(x)                               # an integer x makes an integer array
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    out[...] = e / np.sum(e, axis=axis, keepdims=True)
    return out
''',
        "max_reshaped_to_a_column": '''
def softmax(x, axis=-1):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - x.max(axis=axis).reshape(-1, 1))     # a column: right for a matrix, wrong for a batch
    return e / e.sum(axis=axis).reshape(-1, 1)
''',
    },
    "contextualize": {
        "no_scale": '''
def contextualize(X):
    X = np.asarray(X, dtype=float)
    A = softmax(X @ np.swapaxes(X, -1, -2), axis=-1)
    return A @ X, A
''',
        "scale_by_d": '''
def contextualize(X):
    X = np.asarray(X, dtype=float)
    A = softmax(X @ np.swapaxes(X, -1, -2) / X.shape[-1], axis=-1)
    return A @ X, A
''',
        "column_softmax": '''
def contextualize(X):
    X = np.asarray(X, dtype=float)
    A = softmax(X @ np.swapaxes(X, -1, -2) / np.sqrt(X.shape[-1]), axis=-2)
    return A @ X, A
''',
        "plain_transpose_breaks_batches": '''
def contextualize(X):
    X = np.asarray(X, dtype=float)
    A = softmax(X @ X.T / np.sqrt(X.shape[-1]), axis=-1)
    return A @ X, A
''',
        "scales_X_in_place": '''
def contextualize(X):
    X = np.asarray(X, dtype=float)
    root = X.shape[-1] ** 0.25
    X /= root                                   # both factors of X Xᵀ, so the scores get 1/√d
    A = softmax(X @ np.swapaxes(X, -1, -2), axis=-1)
    return A @ (X * root), A
''',
        "returns_a_list": '''
def contextualize(X):
    X = np.asarray(X, dtype=float)
    A = softmax(X @ np.swapaxes(X, -1, -2) / np.sqrt(X.shape[-1]), axis=-1)
    return [A @ X, A]
''',
        "d_from_shape_1": '''
def contextualize(X):
    X = np.asarray(X, dtype=float)
    d = X.shape[1]                              # the width of a (T, d) matrix; T once a batch axis comes first
    A = softmax(X @ np.swapaxes(X, -1, -2) / np.sqrt(d), axis=-1)
    return A @ X, A
''',
        "one_batch_axis_only": '''
def contextualize(X):
    X = np.asarray(X, dtype=float)
    Xt = X.transpose(0, 2, 1) if X.ndim == 3 else X.T      # written for (T, d) and (B, T, d)
    A = softmax(X @ Xt / np.sqrt(X.shape[-1]), axis=-1)
    return A @ X, A
''',
        "returns_A_then_Y": '''
def contextualize(X):
    X = np.asarray(X, dtype=float)
    A = softmax(X @ np.swapaxes(X, -1, -2) / np.sqrt(X.shape[-1]), axis=-1)
    return A, A @ X
''',
    },
}


#: For each WRONG entry, words that the visible check's message must contain for it to name the
#: true mistake (case-insensitive; tests/test_visible_checks.py measures and prints it).
DIAGNOSES = {
    "softmax": {
        "wrong_axis": ("along axis 0 instead of axis -1",),
        "no_max_subtraction": ("nothing is subtracted",),
        "global_max": ("whole array",),
        "mutates_input": ("in place",),
        "ignores_axis": ("along axis -1 instead of axis 0",),
        "max_without_keepdims": ('pass keepdims=true',),
        "rejects_lists": ('raised attributeerror', 'list'),
        "integer_output_array": ('has dtype int64', 'float64'),
        "max_reshaped_to_a_column": ('has shape (1, 5)',),
    },
    "contextualize": {
        "no_scale": ("not scaled",),
        "scale_by_d": ("d = 2 instead of √d",),
        "column_softmax": ("column",),
        "plain_transpose_breaks_batches": (".t reverses",),
        "scales_X_in_place": ("in place", "argument x"),
        "returns_a_list": ('should return a tuple', 'return y, a'),
        "d_from_shape_1": ('√t = √3', 'x.shape[-1]'),
        "one_batch_axis_only": ('with two batch dimensions', 'transposed'),
        "returns_A_then_Y": ('order', '(y, a)'),
    },
}


#: Each requirement the lesson states for a graded function, the hidden case that tests it, and a
#: WRONG entry that breaks it: ``{function: [(words of the lesson, case label, entry)]}``.
#: tests/test_requirements.py checks that the lesson says those words before the function's solution
#: cell, that the hidden test has that case, and that the entry fails on exactly that case.
#: ``MEASUREMENTS`` stands for the measurements judged after every case passed.
REQUIREMENTS = {
    "softmax": [
        ("whose slices along `axis` are softmax distributions", "a (2, 3, 5) array with axis=0", "ignores_axis"),
        ("Accept lists", "a Python list of 5 logits", "rejects_lists"),
        ("and integer arrays", "an integer (2, 3) matrix", "integer_output_array"),
        ("do not modify `x`", "a 1-D vector of 5 logits", "mutates_input"),
        ("stay finite for logits of ±10 000", "logits around ±1e4 in a (3, 6) matrix", "no_max_subtraction"),
    ],
    "contextualize": [
        ("Return `(Y, A)`", "X of shape (5, 3)", "returns_a_list"),
        ("`A = softmax(X Xᵀ / √d)` row by row", "X of shape (5, 3)", "no_scale"),
        ("Leading batch dimensions must work", "a batch X of shape (2, 4, 6)", "plain_transpose_breaks_batches"),
        ("Leading batch dimensions must work", "two batch dimensions, X of shape (2, 3, 4, 5)", "one_batch_axis_only"),
        ('Return `(Y, A)`', 'X of shape (5, 3)', 'returns_A_then_Y'),
    ],
}

CORRECT = {
    "softmax": {
        "loops_over_slices": '''
def softmax(x, axis=-1):
    x = np.moveaxis(np.array(x, dtype=float), axis, -1)
    out = np.empty_like(x)
    for index in np.ndindex(x.shape[:-1]):
        row = x[index]
        weights = [np.exp(v - row.max()) for v in row]
        out[index] = np.array(weights) / sum(weights)
    return np.moveaxis(out, -1, axis)
''',
        "scipy": '''
def softmax(x, axis=-1):
    import scipy.special
    return scipy.special.softmax(np.asarray(x, dtype=float), axis=axis)
''',
        "logsumexp_with_warnings_and_stderr": '''
def softmax(x, axis=-1):
    import sys, warnings
    x = np.asarray(x, dtype=float)
    print("computing softmax", file=sys.stderr)
    warnings.warn("this softmax is chatty")
    m = np.max(x, axis=axis, keepdims=True)
    log_z = m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
    return np.exp(x - log_z)
''',
    },
    "contextualize": {
        "einsum": '''
def contextualize(X):
    X = np.asarray(X, dtype=float)
    scores = np.einsum("...id,...jd->...ij", X, X) / np.sqrt(X.shape[-1])
    A = softmax(scores)
    return np.einsum("...ij,...jd->...id", A, X), A
''',
        "python_loops_over_tokens": '''
def contextualize(X):
    X = np.asarray(X, dtype=float)
    if X.ndim > 2:
        pairs = [contextualize(x) for x in X]
        return np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs])
    T, d = X.shape
    A = np.zeros((T, T))
    for i in range(T):
        A[i] = softmax(np.array([X[i] @ X[j] for j in range(T)]) / d ** 0.5)
    Y = np.array([sum(A[i, j] * X[j] for j in range(T)) for i in range(T)])
    return Y, A
''',
    },
}
