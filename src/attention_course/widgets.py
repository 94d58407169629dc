"""Interactive explorers for lessons 02, 03 and 09 (ipywidgets) that also run headless.

Each explorer comes in two halves:

- a pure function that computes everything the explorer shows (``it_example_state``,
  ``saturation_state``, ``sampling_state``); you can call it, print it and test it without a browser;
- a builder (``it_explorer``, ``saturation_explorer``, ``sampling_explorer``) that wires sliders to that function,
  draws the initial state at once, and redraws on every change.

The explorers hold no answers: they take the functions that do the work (your own, from the
lesson) as arguments. While those functions are not written yet, or when they raise an error, the
explorer shows a short message saying which function to look at, instead of a traceback.

Every control has a fixed ``description`` and every display a CSS class (``it-explorer-*``,
``saturation-explorer-*``, ``sampling-explorer-*``), so a browser test can find them.
"""
import html

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np

from . import plots, examples

# ---------------------------------------------------------------------------------------------
# Lesson 02: the "it" sentence
# ---------------------------------------------------------------------------------------------


def prefix_read(attention_fn, X, W_Q, W_K, W_V, query, causal=True):
    """What position ``query`` reads, using a self-attention function that has no mask.

    A causal read of position ``i`` sees positions ``0..i`` only, which is exactly an ordinary
    (unmasked) read of the prefix ``X[:i + 1]``. So ``attention_fn(X, W_Q, W_K, W_V) -> (O, A)``
    is called on the prefix (causal) or on the whole sequence (not causal).

    Returns ``(weights, output)``: ``weights`` has one entry per position of ``X`` (zero for the
    positions not read), ``output`` is the query's new vector, shape ``(d_v,)``.
    """
    X = np.asarray(X, dtype=float)                       # (T, d_model)
    T = X.shape[0]
    stop = query + 1 if causal else T
    O, A = attention_fn(X[:stop], W_Q, W_K, W_V)         # (stop, d_v), (stop, stop)
    weights = np.zeros(T)                                # (T,)
    weights[:stop] = np.asarray(A, dtype=float)[query]
    return weights, np.asarray(O, dtype=float)[query]    # (T,), (d_v,)


def causal_read(attention_fn, X, W_Q, W_K, W_V):
    """Every position's causal read, stacked: ``(O (T, d_v), A (T, T))`` with ``A`` lower-triangular."""
    reads = [prefix_read(attention_fn, X, W_Q, W_K, W_V, i, causal=True) for i in range(len(X))]
    A = np.stack([w for w, _ in reads])                  # (T, T)
    O = np.stack([o for _, o in reads])                  # (T, d_v)
    return O, A


def it_example_state(attention_fn, x_it=(0.2, 0.3, 0.0), query="it", causal=True):
    """The "it" sentence, "The cat sat it", with the vector of "it" replaced by ``x_it``.

    Returns a dict with the ``tokens``, the input ``X`` (4, 3), the projections ``W_Q``, ``W_K``,
    ``W_V``, the values ``V`` (4, 2), the ``query`` token and its index ``q``, and what that token
    reads: ``weights`` (4,) and ``output`` (2,).
    """
    X, W_Q, W_K, W_V, tokens = examples.the_cat_sat_it()
    X[tokens.index("it")] = np.asarray(x_it, dtype=float)
    q = tokens.index(query)
    weights, output = prefix_read(attention_fn, X, W_Q, W_K, W_V, q, causal=causal)
    return {"tokens": tokens, "X": X, "W_Q": W_Q, "W_K": W_K, "W_V": W_V, "V": X @ W_V,
            "query": query, "q": q, "causal": causal, "weights": weights, "output": output}


def describe_read(state):
    """One line of text: who the query reads, with what weight, and the vector it gets back."""
    shares = " · ".join(f"{t} {w:.3f}" for t, w in zip(state["tokens"], state["weights"]))
    out = ", ".join(f"{v:.3f}" for v in state["output"])
    mask = "causal" if state["causal"] else "no mask"
    return f'"{state["query"]}" reads ({mask}): {shares} → output [{out}]'


def _draw_it_state(state):
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    plots.shares_bar(state["weights"], state["tokens"], highlight=state["query"], ax=left,
                     title=f'Weights of "{state["query"]}"'
                     + (" (causal)" if state["causal"] else " (no mask)"))
    plots.vectors_2d(state["V"], state["tokens"], outputs={"output": state["output"]}, ax=right,
                     title=f'Values (blue), and the output of "{state["query"]}"')
    right.set_xlabel("value coordinate 1")
    right.set_ylabel("value coordinate 2")
    fig.tight_layout()
    return fig


def _trouble(exc, functions):
    """The explorer's message when the learner's code is not ready or raised an error."""
    names = " or ".join(f"<code>{html.escape(name)}</code>" for name in functions)
    if isinstance(exc, NotImplementedError):
        return (f"<i>This explorer uses your {names}: implement it in the lesson above, run its cell, "
                f"then run this cell again.</i> ({type(exc).__name__})")
    return (f"<i>Your {names} raised an error here, so there is nothing to show: "
            f"<code>{html.escape(type(exc).__name__)}: {html.escape(str(exc))[:300]}</code>. Its visible "
            "check, the cell after its exercise, says what to change; fix it, run its cell, then run "
            "this cell again.</i>")


def it_explorer(attention_fn, x_it=(0.2, 0.3, 0.0), query="it", causal=True):
    """Sliders for the three coordinates of "it", a query dropdown and a causal-mask checkbox.

    ``attention_fn(X, W_Q, W_K, W_V) -> (O, A)`` is an unmasked self-attention (your
    ``self_attention``); the causal read is done on prefixes (see ``prefix_read``). Shows a bar
    chart of the query's weights, its output among the value vectors, and the same numbers as a
    line of text. Returns the widget box (display it by leaving it last in a cell).
    """
    _, _, _, _, tokens = examples.the_cat_sat_it()
    sliders = [widgets.FloatSlider(value=float(v), min=-1.0, max=2.0, step=0.05,
                                   description=f"x_it[{i}]", readout_format=".2f",
                                   continuous_update=False)
               for i, v in enumerate(x_it)]
    chooser = widgets.Dropdown(options=tokens, value=query, description="query")
    masked = widgets.Checkbox(value=causal, description="causal mask")
    line = widgets.HTML()
    line.add_class("it-explorer-weights")

    def show(a, b, c, query, causal):
        try:
            state = it_example_state(attention_fn, (a, b, c), query, causal)
            text = describe_read(state)
            figure = _draw_it_state(state)
        except Exception as exc:  # the learner's function: explain instead of a traceback
            plt.close("all")
            line.value = _trouble(exc, [getattr(attention_fn, "__name__", "function")])
            return
        line.value = text
        plt.show()
        plt.close(figure)

    plot = widgets.interactive_output(show, {"a": sliders[0], "b": sliders[1], "c": sliders[2],
                                             "query": chooser, "causal": masked})
    plot.add_class("it-explorer-plot")
    controls = widgets.HBox([widgets.VBox(sliders), widgets.VBox([chooser, masked])])
    return widgets.VBox([controls, line, plot])


# ---------------------------------------------------------------------------------------------
# Lesson 03: softmax saturation as d_k grows
# ---------------------------------------------------------------------------------------------

#: The widths the saturation explorer offers.
D_K_CHOICES = tuple(2 ** p for p in range(11))          # 1, 2, 4, ..., 1024


def entropy(p):
    """Entropy in nats of the distributions along the last axis (0 · log 0 counts as 0)."""
    p = np.asarray(p, dtype=float)
    safe = np.where(p > 0, p, 1.0)
    return -np.sum(p * np.log(safe), axis=-1)


def _one_read(softmax_fn, jacobian_fn, q, K, divisor):
    weights = np.asarray(softmax_fn(K @ q / divisor), dtype=float)      # (n_keys,)
    J = np.asarray(jacobian_fn(weights), dtype=float)                   # (n_keys, n_keys)
    return weights, float(np.linalg.norm(J))


def saturation_state(softmax_fn, jacobian_fn, d_k, temperature=1.0, scaled=True, n_keys=8, seed=0,
                     n_draws=200):
    """One query reads ``n_keys`` keys, all standard normal in ``d_k`` dimensions.

    The logits are ``K q / (temperature · √d_k)`` when ``scaled``, else ``K q / temperature``.
    ``softmax_fn`` turns them into weights and ``jacobian_fn(p)`` gives the softmax Jacobian at
    those weights. One random draw is what the bars show: ``logits``, ``weights``, ``max_weight``,
    ``entropy`` (nats) and ``jacobian_norm`` (Frobenius). One draw can mislead, so the same three
    numbers are also averaged over ``n_draws`` draws: ``mean_max_weight``, ``mean_entropy``,
    ``mean_jacobian_norm``. ``divisor`` is what the dot products were divided by.
    """
    g = np.random.default_rng(seed)
    divisor = temperature * (np.sqrt(d_k) if scaled else 1.0)
    reads = []
    for _ in range(n_draws):
        q = g.standard_normal(d_k)                                      # (d_k,)
        K = g.standard_normal((n_keys, d_k))                            # (n_keys, d_k)
        if not reads:
            logits = K @ q / divisor                                    # (n_keys,) the draw shown
        reads.append(_one_read(softmax_fn, jacobian_fn, q, K, divisor))
    weights, jacobian_norm = reads[0]
    return {"d_k": d_k, "temperature": temperature, "scaled": scaled, "divisor": divisor,
            "logits": logits, "weights": weights, "max_weight": float(weights.max()),
            "entropy": float(entropy(weights)), "jacobian_norm": jacobian_norm, "n_draws": n_draws,
            "mean_max_weight": float(np.mean([w.max() for w, _ in reads])),
            "mean_entropy": float(np.mean([entropy(w) for w, _ in reads])),
            "mean_jacobian_norm": float(np.mean([j for _, j in reads]))}


def describe_saturation(state):
    """One line of text with the numbers the saturation explorer shows: the draw, then the averages."""
    shares = ", ".join(f"{w:.3f}" for w in state["weights"])
    return (f"d_k = {state['d_k']}, divisor {state['divisor']:.3g}: weights [{shares}]; "
            f"max weight {state['max_weight']:.3f}, entropy {state['entropy']:.3f} nats "
            f"(uniform: {np.log(len(state['weights'])):.3f}), "
            f"‖Jacobian‖ {state['jacobian_norm']:.3g} (one random draw). "
            f"Mean over {state['n_draws']} draws: max weight {state['mean_max_weight']:.3f}, "
            f"entropy {state['mean_entropy']:.3f} nats, ‖Jacobian‖ {state['mean_jacobian_norm']:.3g}")


def saturation_explorer(softmax_fn, jacobian_fn, d_k=64, temperature=1.0, scaled=True, n_keys=8):
    """A ``d_k`` slider, a temperature slider and a "divide by √d_k" checkbox.

    Shows the weights one query gives ``n_keys`` random keys in one random draw as bars, and, as a
    line of text, the max weight, the entropy and the norm of the softmax Jacobian of that draw and
    their means over many draws (what is typical at this width). Returns the widget box.
    """
    width = widgets.SelectionSlider(options=list(D_K_CHOICES), value=d_k, description="d_k",
                                    continuous_update=False)
    heat = widgets.FloatLogSlider(value=temperature, base=10, min=-1, max=1, step=0.05,
                                  description="temperature", readout_format=".2f",
                                  continuous_update=False)
    divide = widgets.Checkbox(value=scaled, description="divide by √d_k")
    line = widgets.HTML()
    line.add_class("saturation-explorer-numbers")
    labels = [f"k{j + 1}" for j in range(n_keys)]

    def show(d_k, temperature, scaled):
        try:
            state = saturation_state(softmax_fn, jacobian_fn, d_k, temperature, scaled, n_keys)
            text = describe_saturation(state)
            ax = plots.shares_bar(state["weights"], labels,
                                  title=f"One random draw: a query reads {n_keys} random keys, d_k = {d_k}"
                                  + (", scaled" if scaled else ", unscaled"))
        except Exception as exc:  # the learner's function: explain instead of a traceback
            plt.close("all")
            line.value = _trouble(exc, [getattr(f, "__name__", "function") for f in (softmax_fn, jacobian_fn)])
            return
        line.value = text
        ax.set_xlabel("key")
        plt.show()
        plt.close(ax.figure)

    plot = widgets.interactive_output(show, {"d_k": width, "temperature": heat, "scaled": divide})
    plot.add_class("saturation-explorer-plot")
    return widgets.VBox([widgets.HBox([width, heat, divide]), line, plot])


# ---------------------------------------------------------------------------------------------
# Lesson 09: temperature and top-k
# ---------------------------------------------------------------------------------------------


def sampling_state(sample_next_fn, generate_fn, params, vocab, prompt, temperature=1.0, top_k=0, seed=0,
                   n_draws=2000, n_chars=60):
    """The next character after ``prompt`` under a temperature and a top-k (0: no cut).

    ``generate_fn`` (your ``generate``) gives the model's logits for the next character;
    ``sample_next_fn`` (your ``sample_next``) is called ``n_draws`` times with a Generator made from
    ``seed``: ``shares`` are the fractions of the draws each character got, ``probabilities`` the
    exact distribution it should follow (softmax of the logits over the temperature, cut to the top
    k, ties kept). ``text``: ``n_chars`` characters your ``generate`` writes after the prompt with
    these settings (from the same seed). Also ``entropy`` of the probabilities, in bits.
    """
    from .gpt_checks import sampling_probabilities
    from .small_gpt import draw_samples

    k = int(top_k) or None
    ids = vocab.encode(prompt)
    _, logits = generate_fn(params, ids, 1, 1.0, None, np.random.default_rng(seed))
    logits = np.asarray(logits, dtype=float)[0]                                     # (V,)
    draws = draw_samples(sample_next_fn, logits, temperature, k, seed, n_draws)[0]  # (n_draws,)
    shares = np.bincount(draws, minlength=vocab.size) / n_draws
    probabilities = sampling_probabilities(logits, temperature, k)
    tokens, _ = generate_fn(params, ids, n_chars, temperature, k, np.random.default_rng(seed))
    safe = np.where(probabilities > 0, probabilities, 1.0)
    return {"prompt": prompt, "temperature": float(temperature), "top_k": k, "logits": logits, "shares": shares,
            "probabilities": probabilities, "entropy": max(0.0, float(-np.sum(probabilities * np.log2(safe)))),
            "kept": int((probabilities > 0).sum()), "n_draws": n_draws, "chars": vocab.chars,
            "text": vocab.decode(np.asarray(tokens)[len(ids):])}


def describe_sampling(state, shown=8):
    """One line: the likeliest next characters with their probability and their share of the draws."""
    order = np.argsort(state["probabilities"], kind="stable")[::-1][:shown]
    label = {"\n": "↵", " ": "␣"}
    parts = " · ".join(f"{label.get(state['chars'][i], state['chars'][i])} {state['probabilities'][i]:.4f}"
                       f" ({state['shares'][i]:.4f})" for i in order)
    cut = "no top-k" if state["top_k"] is None else f"top_k = {state['top_k']}"
    return (f"temperature {state['temperature']:.2f}, {cut}: {_count(state['kept'], 'character')} can be drawn, "
            f"entropy {state['entropy']:.3f} bits. Next character, probability (share of your "
            f"{_count(state['n_draws'], 'draw')}): {parts}")


def _count(n, thing):
    """``1 character``, ``2 characters``."""
    return f"{n} {thing}{'' if n == 1 else 's'}"


def sampling_explorer(sample_next_fn, generate_fn, params, vocab, prompt="Thou art a", temperature=1.0, top_k=0,
                      seed=0, n_draws=2000):
    """A prompt box, a temperature slider and a top-k slider (0: no cut) for a trained model.

    Shows the next character's distribution as bars (your sampler's shares of ``n_draws`` draws beside the
    exact probabilities), the same numbers as a line of text, and a continuation of the prompt
    written by your ``generate`` with these settings. Returns the widget box.
    """
    text_box = widgets.Text(value=prompt, description="prompt", continuous_update=False)
    heat = widgets.FloatLogSlider(value=temperature, base=10, min=-1, max=1, step=0.05,
                                  description="temperature", readout_format=".2f", continuous_update=False)
    cut = widgets.IntSlider(value=top_k, min=0, max=vocab.size, step=1, description="top_k",
                            continuous_update=False)
    line = widgets.HTML()
    line.add_class("sampling-explorer-line")
    written = widgets.HTML()
    written.add_class("sampling-explorer-text")

    def show(prompt, temperature, top_k):
        written.value = ""                  # a continuation of an earlier prompt never stays under a message
        try:
            vocab.encode(prompt or " ")
        except KeyError as exc:
            line.value = f"<i>The prompt holds a character the model has never seen: {html.escape(str(exc))}.</i>"
            return
        try:
            state = sampling_state(sample_next_fn, generate_fn, params, vocab, prompt or " ", temperature, top_k, seed,
                                   n_draws)
        except Exception as exc:  # the learner's functions: explain instead of a traceback
            plt.close("all")
            line.value = _trouble(exc, [getattr(f, "__name__", "function") for f in (sample_next_fn, generate_fn)])
            return
        line.value = html.escape(describe_sampling(state))
        written.value = ("<pre>" + html.escape(state["prompt"]) + "<b>" + html.escape(state["text"]) + "</b></pre>")
        order = np.argsort(state["probabilities"], kind="stable")[::-1][:12]
        labels = [{"\n": "↵", " ": "␣"}.get(state["chars"][i], state["chars"][i]) for i in order]
        fig, ax = plt.subplots(figsize=(8, 3))
        ax.bar(np.arange(len(order)) - 0.2, state["probabilities"][order], width=0.4, label="probability")
        ax.bar(np.arange(len(order)) + 0.2, state["shares"][order], width=0.4, label=f"share of {state['n_draws']} draws")
        ax.set_xticks(range(len(order)), labels)
        ax.set_xlabel("next character (the 12 likeliest)")
        ax.set_ylabel("probability / share")
        ax.set_title(f"After {state['prompt'][-20:]!r}: temperature {temperature:.2f}, "
                     + ("no top-k" if state["top_k"] is None else f"top_k = {state['top_k']}"))
        ax.legend(fontsize=8)
        fig.tight_layout()
        plt.show()
        plt.close(fig)

    plot = widgets.interactive_output(show, {"prompt": text_box, "temperature": heat, "top_k": cut})
    plot.add_class("sampling-explorer-plot")
    return widgets.VBox([widgets.HBox([text_box, heat, cut]), line, plot, written])
