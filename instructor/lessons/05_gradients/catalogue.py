"""Learner answers for lesson 05 (softmax_backward, numerical_gradient, attention_backward,
self_attention_backward).

The notebook provides ``softmax``, ``scaled_dot_product_attention`` and ``self_attention``;
entries may call them and any graded function defined earlier in the notebook.
"""

WRONG = {
    "softmax_backward": {
        "missing_subtraction": '''
def softmax_backward(dA, A):
    return np.asarray(A, dtype=float) * np.asarray(dA, dtype=float)
''',
        "plain_row_sum": '''
def softmax_backward(dA, A):
    dA, A = np.asarray(dA, dtype=float), np.asarray(A, dtype=float)
    return A * (dA - dA.sum(axis=-1, keepdims=True))
''',
        "diagonal_of_jacobian_only": '''
def softmax_backward(dA, A):
    dA, A = np.asarray(dA, dtype=float), np.asarray(A, dtype=float)
    return A * (1 - A) * dA
''',
        "weighted_sum_down_the_columns": '''
def softmax_backward(dA, A):
    dA, A = np.asarray(dA, dtype=float), np.asarray(A, dtype=float)
    return A * (dA - np.sum(dA * A, axis=0, keepdims=True))
''',
        "sum_without_keepdims": '''
def softmax_backward(dA, A):
    dA, A = np.asarray(dA, dtype=float), np.asarray(A, dtype=float)
    return A * (dA - np.sum(dA * A, axis=-1))
''',
        "jacobian_for_one_row_only": '''
def softmax_backward(dA, A):
    J = np.diag(A) - np.outer(A, A)
    return J @ dA
''',
        "subtracts_in_place_on_a_copy": '''
def softmax_backward(dA, A):
    dS = np.array(dA)                                   # keeps dA's dtype: integers stay integers
    dS -= np.sum(np.asarray(dA) * A, axis=-1, keepdims=True)
    return A * dS
''',
        "one_batch_axis_only": '''
def softmax_backward(dA, A):
    dA, A = np.asarray(dA, dtype=float), np.asarray(A, dtype=float)
    if A.ndim == 3:                                              # a batch of (T_q, T_k) weights
        inner = np.einsum("bij,bij->bi", A, dA)[..., None]
    else:                                                        # written for (T_k,), (T_q, T_k), (B, T_q, T_k)
        inner = (A * dA).sum(axis=-1, keepdims=True) if A.ndim == 1 else np.einsum("ij,ij->i", A, dA)[:, None]
    return A * (dA - inner)
''',
    },
    "numerical_gradient": {
        "forward_difference": '''
def numerical_gradient(f, x, h=1e-5):
    x = np.array(x, dtype=float)
    grad = np.zeros_like(x)
    base = f(x.copy())
    for i in np.ndindex(x.shape):
        xp = x.copy()
        xp[i] += h
        grad[i] = (f(xp) - base) / h
    return grad
''',
        "divides_by_h": '''
def numerical_gradient(f, x, h=1e-5):
    x = np.array(x, dtype=float)
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        grad[i] = (f(xp) - f(xm)) / h
    return grad
''',
        "mutates_x_and_never_restores": '''
def numerical_gradient(f, x, h=1e-5):
    grad = np.zeros(x.shape)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + h
        f_plus = f(x.copy())
        x[i] = old - h
        f_minus = f(x.copy())
        grad[i] = (f_plus - f_minus) / (2 * h)
    return grad
''',
        "integer_copy": '''
def numerical_gradient(f, x, h=1e-5):
    x = np.copy(x)
    grad = np.zeros(x.shape)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + h
        f_plus = f(x.copy())
        x[i] = old - h
        f_minus = f(x.copy())
        x[i] = old
        grad[i] = (f_plus - f_minus) / (2 * h)
    return grad
''',
        "ignores_h": '''
def numerical_gradient(f, x, h=1e-5):
    step = 1e-5
    x = np.array(x, dtype=float)
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += step
        xm[i] -= step
        grad[i] = (f(xp) - f(xm)) / (2 * step)
    return grad
''',
        "hands_f_the_working_array": '''
def numerical_gradient(f, x, h=1e-5):
    probe = np.array(x, dtype=float)
    grad = np.zeros_like(probe)
    for i in np.ndindex(probe.shape):
        old = probe[i]
        probe[i] = old + h
        f_plus = f(probe)
        probe[i] = old - h
        f_minus = f(probe)
        probe[i] = old
        grad[i] = (f_plus - f_minus) / (2 * h)
    return grad
''',
        "perturbs_a_flat_reshape": '''
def numerical_gradient(f, x, h=1e-5):
    x = np.asarray(x, dtype=float)                      # no copy for a float64 x
    grad = np.zeros(x.shape)
    flat, flat_grad = x.reshape(-1), grad.reshape(-1)   # a view, or a silent copy when x is not C-ordered
    for k in range(flat.size):
        old = flat[k]
        flat[k] = old + h
        up = f(x.copy())
        flat[k] = old - h
        down = f(x.copy())
        flat[k] = old
        flat_grad[k] = (up - down) / (2 * h)
    return grad
''',
        "restores_by_arithmetic": '''
def numerical_gradient(f, x, h=1e-5):
    probe = np.array(x, dtype=float)
    grad = np.zeros(probe.shape)
    for index in np.ndindex(probe.shape):
        probe[index] += h
        f_plus = f(probe.copy())
        probe[index] -= 2 * h
        f_minus = f(probe.copy())
        probe[index] += h                          # back where it was, up to rounding
        grad[index] = (f_plus - f_minus) / (2 * h)
    return grad
''',
        "default_step_1e_6": '''
def numerical_gradient(f, x, h=1e-6):
    probe = np.array(x, dtype=float)
    grad = np.zeros(probe.shape)
    for index in np.ndindex(probe.shape):
        original = probe[index]
        probe[index] = original + h
        f_plus = f(probe.copy())
        probe[index] = original - h
        f_minus = f(probe.copy())
        probe[index] = original
        grad[index] = (f_plus - f_minus) / (2 * h)
    return grad
''',
    },
    "attention_backward": {
        "dV_not_transposed": '''
def attention_backward(dO, Q, K, V, mask=None):
    dO, Q, K, V = (np.asarray(M, dtype=float) for M in (dO, Q, K, V))
    _, A = scaled_dot_product_attention(Q, K, V, mask)
    dV = A @ dO
    dS = softmax_backward(dO @ np.swapaxes(V, -1, -2), A) / np.sqrt(K.shape[-1])
    return dS @ K, np.swapaxes(dS, -1, -2) @ Q, dV
''',
        "missing_scale": '''
def attention_backward(dO, Q, K, V, mask=None):
    dO, Q, K, V = (np.asarray(M, dtype=float) for M in (dO, Q, K, V))
    _, A = scaled_dot_product_attention(Q, K, V, mask)
    dV = np.swapaxes(A, -1, -2) @ dO
    dS = softmax_backward(dO @ np.swapaxes(V, -1, -2), A)
    return dS @ K, np.swapaxes(dS, -1, -2) @ Q, dV
''',
        "mask_ignored": '''
def attention_backward(dO, Q, K, V, mask=None):
    dO, Q, K, V = (np.asarray(M, dtype=float) for M in (dO, Q, K, V))
    _, A = scaled_dot_product_attention(Q, K, V)
    dV = np.swapaxes(A, -1, -2) @ dO
    dS = softmax_backward(dO @ np.swapaxes(V, -1, -2), A) / np.sqrt(K.shape[-1])
    return dS @ K, np.swapaxes(dS, -1, -2) @ Q, dV
''',
        "dK_missing_transpose": '''
def attention_backward(dO, Q, K, V, mask=None):
    dO, Q, K, V = (np.asarray(M, dtype=float) for M in (dO, Q, K, V))
    _, A = scaled_dot_product_attention(Q, K, V, mask)
    dV = np.swapaxes(A, -1, -2) @ dO
    dS = softmax_backward(dO @ np.swapaxes(V, -1, -2), A) / np.sqrt(K.shape[-1])
    return dS @ K, dS @ Q, dV
''',
        "softmax_backward_without_subtraction": '''
def attention_backward(dO, Q, K, V, mask=None):
    dO, Q, K, V = (np.asarray(M, dtype=float) for M in (dO, Q, K, V))
    _, A = scaled_dot_product_attention(Q, K, V, mask)
    dV = np.swapaxes(A, -1, -2) @ dO
    dS = A * (dO @ np.swapaxes(V, -1, -2)) / np.sqrt(K.shape[-1])
    return dS @ K, np.swapaxes(dS, -1, -2) @ Q, dV
''',
        "plain_transpose_breaks_batches": '''
def attention_backward(dO, Q, K, V, mask=None):
    dO, Q, K, V = (np.asarray(M, dtype=float) for M in (dO, Q, K, V))
    _, A = scaled_dot_product_attention(Q, K, V, mask)
    dV = A.T @ dO
    dS = softmax_backward(dO @ V.T, A) / np.sqrt(K.shape[-1])
    return dS @ K, dS.T @ Q, dV
''',
        "one_batch_axis_only": '''
def attention_backward(dO, Q, K, V, mask=None):
    dO, Q, K, V = (np.asarray(M, dtype=float) for M in (dO, Q, K, V))
    tr = lambda M: M.transpose(0, 2, 1) if M.ndim == 3 else M.T     # written for (T, d) and (B, T, d)
    _, A = scaled_dot_product_attention(Q, K, V, mask)
    dV = tr(A) @ dO
    dS = softmax_backward(dO @ tr(V), A) / np.sqrt(K.shape[-1])
    return dS @ K, tr(dS) @ Q, dV
''',
    },
    "self_attention_backward": {
        "weights_not_summed_over_batch": '''
def self_attention_backward(dO, X, W_Q, W_K, W_V, mask=None):
    X = np.asarray(X, dtype=float)
    dQ, dK, dV = attention_backward(dO, X @ W_Q, X @ W_K, X @ W_V, mask)
    Xt = np.swapaxes(X, -1, -2)
    dX = dQ @ W_Q.T + dK @ W_K.T + dV @ W_V.T
    return dX, Xt @ dQ, Xt @ dK, Xt @ dV
''',
        "dX_misses_the_key_path": '''
def self_attention_backward(dO, X, W_Q, W_K, W_V, mask=None):
    X = np.asarray(X, dtype=float)
    dQ, dK, dV = attention_backward(dO, X @ W_Q, X @ W_K, X @ W_V, mask)
    Xt = np.swapaxes(X, -1, -2)
    dX = dQ @ W_Q.T + dV @ W_V.T
    sum_batch = lambda G, W: G.reshape(-1, *W.shape).sum(axis=0)
    return dX, sum_batch(Xt @ dQ, W_Q), sum_batch(Xt @ dK, W_K), sum_batch(Xt @ dV, W_V)
''',
        "transposed_weight_gradients": '''
def self_attention_backward(dO, X, W_Q, W_K, W_V, mask=None):
    X = np.asarray(X, dtype=float)
    dQ, dK, dV = attention_backward(dO, X @ W_Q, X @ W_K, X @ W_V, mask)
    dX = dQ @ W_Q.T + dK @ W_K.T + dV @ W_V.T
    flat_X = X.reshape(-1, X.shape[-1])
    return (dX, dQ.reshape(-1, dQ.shape[-1]).T @ flat_X, dK.reshape(-1, dK.shape[-1]).T @ flat_X,
            dV.reshape(-1, dV.shape[-1]).T @ flat_X)
''',
        "mask_dropped": '''
def self_attention_backward(dO, X, W_Q, W_K, W_V, mask=None):
    X = np.asarray(X, dtype=float)
    dQ, dK, dV = attention_backward(dO, X @ W_Q, X @ W_K, X @ W_V)
    dX = dQ @ W_Q.T + dK @ W_K.T + dV @ W_V.T
    flat_X = X.reshape(-1, X.shape[-1])
    grads = [flat_X.T @ d.reshape(-1, d.shape[-1]) for d in (dQ, dK, dV)]
    return (dX, *grads)
''',
        "weights_averaged_over_batch": '''
def self_attention_backward(dO, X, W_Q, W_K, W_V, mask=None):
    X = np.asarray(X, dtype=float)
    dQ, dK, dV = attention_backward(dO, X @ W_Q, X @ W_K, X @ W_V, mask)
    Xt = np.swapaxes(X, -1, -2)
    dX = dQ @ W_Q.T + dK @ W_K.T + dV @ W_V.T
    mean_batch = lambda G, W: G.reshape(-1, *W.shape).mean(axis=0)
    return dX, mean_batch(Xt @ dQ, W_Q), mean_batch(Xt @ dK, W_K), mean_batch(Xt @ dV, W_V)
''',
        "one_batch_axis_only": '''
def self_attention_backward(dO, X, W_Q, W_K, W_V, mask=None):
    dO, X = np.asarray(dO, dtype=float), np.asarray(X, dtype=float)
    W_Q, W_K, W_V = (np.asarray(W, dtype=float) for W in (W_Q, W_K, W_V))
    dQ, dK, dV = attention_backward(dO, X @ W_Q, X @ W_K, X @ W_V, mask)
    if X.ndim == 3:                                       # a batch: sum over its sequences
        grads = [np.einsum("btd,btk->dk", X, dP) for dP in (dQ, dK, dV)]
    else:                                                 # written for (T, d) and (B, T, d)
        grads = [X.T @ dP for dP in (dQ, dK, dV)]
    dX = dQ @ W_Q.T + dK @ W_K.T + dV @ W_V.T
    return (dX, *grads)
''',
    },
}


#: For each WRONG entry, words that the visible check's message must contain for it to name the
#: true mistake (case-insensitive; tests/test_visible_checks.py measures and prints it).
DIAGNOSES = {
    "softmax_backward": {
        "missing_subtraction": ("subtraction",),
        "plain_row_sum": ("plain sum",),
        "diagonal_of_jacobian_only": ("only the diagonal",),
        "weighted_sum_down_the_columns": ("axis=0",),
        "sum_without_keepdims": ('pass keepdims=true',),
        "jacobian_for_one_row_only": ("one row at a time",),
        "subtracts_in_place_on_a_copy": ('cannot cast ufunc',),
        "one_batch_axis_only": ('with two batch dimensions',),
    },
    "numerical_gradient": {
        "forward_difference": ("forward difference",),
        "divides_by_h": ("instead of 2h",),
        "mutates_x_and_never_restores": ("in place",),
        "integer_copy": ('rounds x ± h back to an integer',),
        "ignores_h": ("ignored",),
        "hands_f_the_working_array": ("fresh copy",),
        "perturbs_a_flat_reshape": ('not c-ordered',),
        "restores_by_arithmetic": ('not put back exactly',),
        "default_step_1e_6": ('default step h = 1e-5',),
    },
    "attention_backward": {
        "dV_not_transposed": ("a do instead of aᵀ do",),
        "missing_scale": ("1/√d_k scale is left out",),
        "mask_ignored": ("ignore the mask",),
        "dK_missing_transpose": ("ds q instead of dsᵀ q",),
        "softmax_backward_without_subtraction": ("subtraction",),
        "plain_transpose_breaks_batches": (".t reverses",),
        "one_batch_axis_only": ('with two batch dimensions',),
    },
    "self_attention_backward": {
        "weights_not_summed_over_batch": ('extra leading axes',),
        "dX_misses_the_key_path": ("key path",),
        "transposed_weight_gradients": ("transposed",),
        "mask_dropped": ("mask is left out",),
        "weights_averaged_over_batch": ("averaged",),
        "one_batch_axis_only": ('with two batch dimensions',),
    },
}


#: Each requirement the lesson states, its hidden case and a WRONG entry that breaks it (see lesson01.py).
REQUIREMENTS = {
    "softmax_backward": [
        ("using the formula above row by row", "a single row of 6 weights", "missing_subtraction"),
        ("Take the weighted sum along the last axis with `keepdims=True`", "weights of shape (4, 7)",
         "sum_without_keepdims"),
        ("Accept integer input", "an integer upstream gradient dA of shape (2, 4, 3)", "subtracts_in_place_on_a_copy"),
        ('any number of leading axes', 'two batch dimensions, weights of shape (2, 2, 3, 4)', 'one_batch_axis_only'),
    ],
    "numerical_gradient": [
        ("Return the central-difference estimate", "f(y) = Σ c·sin(y) + Σ b·y² at x of shape (3, 4)",
         "forward_difference"),
        ("**`x` is unchanged afterwards.**", "f(y) = Σ c·sin(y) + Σ b·y² at x of shape (3, 4)",
         "mutates_x_and_never_restores"),
        ("which also promotes integer input", "an integer x of shape (2, 3) with f(y) = Σ c·sin(y) + Σ b·y²",
         "integer_copy"),
        ("Call `f` on a **fresh copy**",
         "f(S) = Σ G ⊙ softmax(S) computed by a softmax that overwrites its argument, at S of shape (3, 4)",
         "hands_f_the_working_array"),
        ("or a view that is not C-ordered",
         "the softmax loss f(S) = Σ G ⊙ softmax(S) at a transposed (not C-ordered) S of shape (5, 3)",
         "perturbs_a_flat_reshape"),
        ('Put each entry back **exactly** after probing it', 'f(y) = Σ c·sin(y) + Σ b·y² at x of shape (3, 4)', 'restores_by_arithmetic'),
        ('`numerical_gradient(f, x, h=1e-5)`', 'f(y) = Σ c·sin(y) + Σ b·y² at x of shape (3, 4)', 'default_step_1e_6'),
    ],
    "attention_backward": [
        ("Recompute `A` with the provided `scaled_dot_product_attention(Q, K, V, mask)`",
         "a key mask of shape (T_k,) with T_q = 4, T_k = 5", "mask_ignored"),
        ("$dV = A^\\top dO$", "Q, K of shape (2, 4, 6) and V of shape (2, 4, 3), no mask", "dV_not_transposed"),
        ("never `M.T`", "Q, K of shape (2, 4, 6) and V of shape (2, 4, 3), no mask", "plain_transpose_breaks_batches"),
        ('`Q (..., T_q, d_k)`', 'two batch dimensions, Q of shape (2, 2, 3, 6), with a (T_q, T_k) = (3, 3) causal mask', 'one_batch_axis_only'),
    ],
    "self_attention_backward": [
        ("(summed over the batch)", "a batch X of shape (2, 5, 4), d_k = 6, d_v = 3, with a causal (T, T) mask",
         "weights_not_summed_over_batch"),
        ("$dX = dQ\\,W_Q^\\top + dK\\,W_K^\\top + dV\\,W_V^\\top$", "X of shape (5, 4), d_k = 6, d_v = 3, no mask",
         "dX_misses_the_key_path"),
        ("the mask is as in exercise 3", "a batch X of shape (2, 5, 4), d_k = 6, d_v = 3, with a causal (T, T) mask",
         "mask_dropped"),
        ('`X` has shape `(..., T, d_model)`', 'two batch dimensions, X of shape (2, 2, 4, 3), d_k = 6, d_v = 5, with a (2, 2, 4, 4) mask holding a blind query row', 'one_batch_axis_only'),
    ],
}

CORRECT = {
    "softmax_backward": {
        "explicit_jacobian_per_row": '''
def softmax_backward(dA, A):
    dA, A = np.asarray(dA, dtype=float), np.asarray(A, dtype=float)
    out = np.empty(np.broadcast_shapes(dA.shape, A.shape))
    for index in np.ndindex(out.shape[:-1]):
        a, g = A[index], dA[index]
        out[index] = (np.diag(a) - np.outer(a, a)) @ g
    return out
''',
        "einsum": '''
def softmax_backward(dA, A):
    dA, A = np.asarray(dA, dtype=float), np.asarray(A, dtype=float)
    inner = np.einsum("...j,...j->...", dA, A)[..., None]
    return A * dA - A * inner
''',
    },
    "numerical_gradient": {
        "flat_index_on_a_copy": '''
def numerical_gradient(f, x, h=1e-5):
    work = np.array(x, dtype=np.float64, order="C")
    flat = work.reshape(-1)
    grad = np.zeros(flat.size)
    for k in range(flat.size):
        keep = flat[k]
        flat[k] = keep + h
        up = f(work.copy())
        flat[k] = keep - h
        down = f(work.copy())
        flat[k] = keep
        grad[k] = (up - down) / (2 * h)
    return grad.reshape(work.shape)
''',
        "one_hot_steps": '''
def numerical_gradient(f, x, h=1e-5):
    x = np.asarray(x, dtype=float)
    grad = np.empty(x.shape)
    for index in np.ndindex(*x.shape):
        step = np.zeros(x.shape)
        step[index] = h
        grad[index] = (f(x + step) - f(x - step)) / (2 * h)
    return grad
''',
    },
    "attention_backward": {
        "einsum": '''
def attention_backward(dO, Q, K, V, mask=None):
    dO, Q, K, V = (np.asarray(M, dtype=float) for M in (dO, Q, K, V))
    _, A = scaled_dot_product_attention(Q, K, V, mask)
    dV = np.einsum("...ij,...id->...jd", A, dO)
    dA = np.einsum("...id,...jd->...ij", dO, V)
    dS = softmax_backward(dA, A) / np.sqrt(K.shape[-1])
    dQ = np.einsum("...ij,...jd->...id", dS, K)
    dK = np.einsum("...ij,...id->...jd", dS, Q)
    return dQ, dK, dV
''',
        "seed_formula_with_the_read": '''
def attention_backward(dO, Q, K, V, mask=None):
    # ∂L/∂e_ij = a_ij g_iᵀ(v_j − o_i): the weighted sum ⟨a_i, dA_i⟩ is g_iᵀ o_i.
    dO, Q, K, V = (np.asarray(M, dtype=float) for M in (dO, Q, K, V))
    O, A = scaled_dot_product_attention(Q, K, V, mask)
    g_dot_v = dO @ np.swapaxes(V, -1, -2)
    g_dot_o = np.sum(dO * O, axis=-1, keepdims=True)
    dE = A * (g_dot_v - g_dot_o)
    root = np.sqrt(K.shape[-1])
    return dE @ K / root, np.swapaxes(dE, -1, -2) @ Q / root, np.swapaxes(A, -1, -2) @ dO
''',
        "loop_over_batch_items": '''
def attention_backward(dO, Q, K, V, mask=None):
    dO, Q, K, V = (np.asarray(M, dtype=float) for M in (dO, Q, K, V))
    if Q.ndim > 2:
        m = None if mask is None else np.broadcast_to(mask, Q.shape[:-1] + (K.shape[-2],))
        parts = [attention_backward(dO[b], Q[b], K[b], V[b], None if m is None else m[b])
                 for b in range(Q.shape[0])]
        return tuple(np.stack([p[n] for p in parts]) for n in range(3))
    _, A = scaled_dot_product_attention(Q, K, V, mask)
    d_k = K.shape[1]
    dV = A.T @ dO
    dS = np.zeros_like(A)
    for i in range(A.shape[0]):
        a = A[i]
        dS[i] = (np.diag(a) - np.outer(a, a)) @ (V @ dO[i])
    dS /= np.sqrt(d_k)
    return dS @ K, dS.T @ Q, dV
''',
    },
    "self_attention_backward": {
        "reuses_attention_backward": '''
def self_attention_backward(dO, X, W_Q, W_K, W_V, mask=None):
    X = np.asarray(X, dtype=float)
    dQ, dK, dV = attention_backward(dO, X @ W_Q, X @ W_K, X @ W_V, mask)
    dX = dQ @ np.transpose(W_Q) + dK @ np.transpose(W_K) + dV @ np.transpose(W_V)
    flat_X = X.reshape(-1, X.shape[-1])
    dW_Q = flat_X.T @ dQ.reshape(-1, dQ.shape[-1])
    dW_K = flat_X.T @ dK.reshape(-1, dK.shape[-1])
    dW_V = flat_X.T @ dV.reshape(-1, dV.shape[-1])
    return dX, dW_Q, dW_K, dW_V
''',
        "einsum_with_tensordot": '''
def self_attention_backward(dO, X, W_Q, W_K, W_V, mask=None):
    X = np.asarray(X, dtype=float)
    Ws = [np.asarray(W, dtype=float) for W in (W_Q, W_K, W_V)]
    grads = attention_backward(dO, *(X @ W for W in Ws), mask)
    lead = tuple(range(X.ndim - 1))
    dWs = [np.tensordot(X, g, axes=(lead, lead)) for g in grads]
    dX = sum(np.einsum("...tk,dk->...td", g, W) for g, W in zip(grads, Ws))
    return (dX, *dWs)
''',
    },
}
