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

#: For each WRONG entry, words the visible check's message must contain to name its mistake (and
#: that no other entry's message contains).
DIAGNOSES = {
    "__FUNCTION__": {
        "mean_over_columns": ("over the columns",),
        "global_mean": ("whole array",),
        "changes_x_in_place": ("in place",),
    },
}

#: Each requirement the exercise states, the hidden case that tests it and a WRONG entry that breaks
#: it (tests/test_requirements.py): the lesson says those words before the solution cell, and the
#: entry fails exactly on that case.
REQUIREMENTS = {
    "__FUNCTION__": [
        ("minus the mean of each row", "a (4, 7) matrix", "mean_over_columns"),
        ("without changing `x`", "a 1-D row of 5 scores", "changes_x_in_place"),
    ],
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
