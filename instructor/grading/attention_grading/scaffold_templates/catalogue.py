"""Learner answers for lesson __NUMBER__ (__FUNCTION__), written by ``make new-lesson``: replace
them with the mistakes learners really make here and correct answers written differently."""

WRONG = {
    "__FUNCTION__": {
        "mean_over_columns": '''
def __FUNCTION__(x):
    x = np.asarray(x, dtype=float)
    return x - np.mean(x, axis=0, keepdims=True)
''',
        "global_mean": '''
def __FUNCTION__(x):
    x = np.asarray(x, dtype=float)
    return x - np.mean(x)
''',
        "changes_x_in_place": '''
def __FUNCTION__(x):
    x -= np.mean(x, axis=-1, keepdims=True)
    return x
''',
    },
}

#: For each WRONG entry, words the visible check's message must contain to name its mistake.
DIAGNOSES = {
    "__FUNCTION__": {
        "mean_over_columns": ("over the columns",),
        "global_mean": ("whole array",),
        "changes_x_in_place": ("in place",),
    },
}

CORRECT = {
    "__FUNCTION__": {
        "loop_over_rows": '''
def __FUNCTION__(x):
    x = np.array(x, dtype=float)
    flat = x.reshape(-1, x.shape[-1])
    for row in flat:
        row -= sum(row) / len(row)
    return flat.reshape(x.shape)
''',
        "chatty_with_warning": '''
def __FUNCTION__(x):
    import sys, warnings
    print("centring", file=sys.stderr)
    warnings.warn("chatty")
    x = np.asarray(x, dtype=float)
    return x - x.sum(axis=-1, keepdims=True) / x.shape[-1]
''',
    },
}
