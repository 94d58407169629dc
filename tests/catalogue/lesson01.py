"""Learner answers for lesson 01 (softmax, contextualize)."""

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
    },
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
