"""Pictures the lessons share: attention heatmaps, shares as bars, 2-D vectors moving.

Every function draws on a given Matplotlib axis (or a new one), labels its axes,
sets a title and returns the axis, so a lesson can add to it.
"""
import matplotlib.pyplot as plt
import numpy as np


def _axis(ax, size=(4.5, 3.8)):
    if ax is None:
        _, ax = plt.subplots(figsize=size)
    return ax


def _token_matrix(values, queries, keys, title, ax, annotate, cmap, vmin, vmax, digits, label,
                  light_above):
    """A token-by-token matrix: rows are the reading (query) tokens, columns the tokens read."""
    keys = queries if keys is None else keys
    ax = _axis(ax)
    image = ax.imshow(values, cmap=cmap, vmin=vmin, vmax=vmax)
    ax.set_xticks(range(len(keys)), keys)
    ax.set_yticks(range(len(queries)), queries)
    ax.set_xlabel("token being read (key)")
    ax.set_ylabel("token reading (query)")
    ax.set_title(title)
    if annotate:
        for (i, j), v in np.ndenumerate(values):
            ax.text(j, i, f"{v:.{digits}f}", ha="center", va="center",
                    color="white" if abs(v) > light_above else "black", fontsize=9)
    ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label=label)
    return ax


def attention_heatmap(weights, queries, keys=None, title="Attention weights", ax=None,
                      annotate=True, cmap="Blues"):
    """Rows are the reading (query) tokens, columns the tokens read (keys); each row sums to 1."""
    weights = np.asarray(weights, dtype=float)
    return _token_matrix(weights, queries, keys, title, ax, annotate, cmap=cmap, vmin=0.0,
                         vmax=max(1.0, float(weights.max())), digits=3, label="weight", light_above=0.6)


def shares_bar(shares, labels, title="Shares of one unit of attention", ax=None, highlight=None):
    """One bar per token; the bars add up to 1. ``highlight`` names a bar to colour differently."""
    shares = np.asarray(shares, dtype=float)
    ax = _axis(ax, size=(5.5, 3.2))
    colours = ["tab:orange" if label == highlight else "tab:blue" for label in labels]
    bars = ax.bar(labels, shares, color=colours)
    ax.bar_label(bars, labels=[f"{s:.3f}" for s in shares], padding=2)
    ax.set_ylim(0, max(1.0, float(shares.max()) * 1.15))
    ax.set_xlabel("token")
    ax.set_ylabel("share of attention")
    ax.set_title(title)
    return ax


def _segment_distance(point, start, end):
    """Distance from ``point`` to the segment from ``start`` to ``end``."""
    along = end - start
    t = 0.0 if not along.any() else np.clip(np.dot(point - start, along) / np.dot(along, along), 0, 1)
    return float(np.linalg.norm(point - (start + t * along)))


def _label_offset(point, segments, reach, distance=16):
    """Text offset (in points) and alignment for a label at ``point``: of eight directions, the one
    whose spot at ``reach`` (data units) lies farthest from every drawn arrow (``segments``)."""
    point = np.asarray(point, dtype=float)
    best, best_gap = None, -1.0
    for angle in np.arange(8) * np.pi / 4 + np.pi / 8:
        way = np.array([np.cos(angle), np.sin(angle)])
        gap = min(_segment_distance(point + reach * way, a, b) for a, b in segments)
        if gap > best_gap:
            best, best_gap = way, gap
    ha = "left" if best[0] > 0.3 else "right" if best[0] < -0.3 else "center"
    va = "bottom" if best[1] > 0.3 else "top" if best[1] < -0.3 else "center"
    return tuple(distance * best), ha, va


def vectors_2d(points, labels, moved=None, outputs=None, title="Token vectors", ax=None):
    """Arrows from the origin to each 2-D vector.

    ``moved`` maps a label to that token's new position (its context vector): a dashed arrow from
    the token's own vector to it. ``outputs`` maps a label to a vector that is not one of the
    points moved (the output of a read, say): an arrow of its own from the origin.
    """
    points = np.asarray(points, dtype=float)
    ax = _axis(ax, size=(4.8, 4.2))
    for (x, y), label in zip(points, labels):
        ax.annotate("", xy=(x, y), xytext=(0, 0),
                    arrowprops=dict(arrowstyle="->", color="tab:blue", lw=1.8))
        ax.text(x, y, f" {label}", va="bottom", fontsize=10)
    extra = [np.asarray(v, dtype=float) for v in [*(moved or {}).values(), *(outputs or {}).values()]]
    origin = np.zeros(2)
    segments = [(origin, p) for p in points]
    segments += [(points[labels.index(label)], np.asarray(new, dtype=float)) for label, new in (moved or {}).items()]
    segments += [(origin, np.asarray(v, dtype=float)) for v in (outputs or {}).values()]
    segments += [(p, p + [0.25 * max(np.abs(points).max(), 1e-12), 0.0]) for p in points]   # the point labels
    reach = 0.15 * max(np.abs(np.vstack([points, *extra])).max(), 1e-12) if extra else 1.0
    for label, new in (moved or {}).items():
        start = points[labels.index(label)]
        new = np.asarray(new, dtype=float)
        ax.annotate("", xy=tuple(new), xytext=tuple(start),
                    arrowprops=dict(arrowstyle="->", color="tab:orange", lw=2, linestyle="--"))
        ax.plot(*new, "o", color="tab:orange")
        offset, ha, va = _label_offset(new, segments, reach)
        ax.annotate(f"{label} in context", tuple(new), xytext=offset, textcoords="offset points",
                    color="tab:orange", ha=ha, va=va, fontsize=10)
    for label, vector in (outputs or {}).items():
        vector = np.asarray(vector, dtype=float)
        ax.annotate("", xy=tuple(vector), xytext=(0, 0),
                    arrowprops=dict(arrowstyle="->", color="tab:orange", lw=2.2))
        offset, ha, va = _label_offset(vector, segments, reach)
        ax.annotate(label, tuple(vector), xytext=offset, textcoords="offset points",
                    color="tab:orange", ha=ha, va=va, fontsize=10)
    span = np.abs(np.vstack([points, *[np.atleast_2d(v) for v in extra]])).max()
    ax.set_xlim(-span * 1.25, span * 1.25)
    ax.set_ylim(-span * 0.25, span * 1.35)
    ax.axhline(0, color="grey", lw=0.5)
    ax.axvline(0, color="grey", lw=0.5)
    ax.set_aspect("equal")
    ax.set_xlabel("coordinate 1")
    ax.set_ylabel("coordinate 2")
    ax.set_title(title)
    return ax


def score_heatmap(scores, queries, keys=None, title="Scores", ax=None, annotate=True):
    """Raw scores of any sign on a colour scale centred at 0; rows read, columns are read."""
    scores = np.asarray(scores, dtype=float)
    span = max(float(np.abs(scores).max()), 1e-12)
    return _token_matrix(scores, queries, keys, title, ax, annotate, cmap="RdBu_r", vmin=-span,
                         vmax=span, digits=2, label="score", light_above=0.6 * span)


def mask_heatmap(mask, queries, keys=None, title="Who may read whom", ax=None, legend=True):
    """A boolean mask as a grid: filled = may attend, blank = blocked; rows read, columns are read."""
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    mask = np.asarray(mask, dtype=bool)
    keys = queries if keys is None else keys
    ax = _axis(ax, size=(4.6, 4.0))
    ax.imshow(mask, cmap=ListedColormap(["#f2f2f2", "tab:green"]), vmin=0, vmax=1)
    ax.set_xticks(range(len(keys)), keys, rotation=45 if max(map(len, map(str, keys))) > 3 else 0)
    ax.set_yticks(range(len(queries)), queries)
    ax.set_xlabel("position being read (key j)")
    ax.set_ylabel("position reading (query i)")
    ax.set_title(title)
    for (i, j), allowed in np.ndenumerate(mask):
        ax.text(j, i, "✓" if allowed else "·", ha="center", va="center",
                color="white" if allowed else "grey", fontsize=11)
    ax.set_xticks(np.arange(-0.5, mask.shape[1]), minor=True)
    ax.set_yticks(np.arange(-0.5, mask.shape[0]), minor=True)
    ax.grid(which="minor", color="white", lw=1.5)
    ax.tick_params(which="minor", length=0)
    if legend:
        ax.legend(handles=[Patch(facecolor="tab:green", label="✓ True: may attend"),
                           Patch(facecolor="#f2f2f2", edgecolor="grey", label="· False: blocked")],
                  loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8)
    return ax


def attention_heads(weights, queries, keys=None, titles=None, suptitle="Attention weights per head",
                    annotate=False):
    """One heatmap per head, side by side, on one colour scale: ``weights`` is ``(h, T_q, T_k)``."""
    weights = np.asarray(weights, dtype=float)
    keys = queries if keys is None else keys
    h = weights.shape[0]
    titles = titles or [f"head {i}" for i in range(h)]
    fig, axes = plt.subplots(1, h, figsize=(3.3 * h + 1.0, 3.8), sharey=True, squeeze=False,
                             constrained_layout=True)
    axes = axes[0]
    rotate = 60 if max(len(str(k)) for k in keys) > 3 else 0
    for i, ax in enumerate(axes):
        image = ax.imshow(weights[i], cmap="Blues", vmin=0.0, vmax=1.0)
        ax.set_xticks(range(len(keys)), keys, rotation=rotate, ha="right" if rotate else "center")
        ax.set_yticks(range(len(queries)), queries)
        ax.set_xlabel("token being read (key)")
        ax.set_title(titles[i], fontsize=10)
        if annotate:
            for (r, c), w in np.ndenumerate(weights[i]):
                ax.text(c, r, f"{w:.2f}", ha="center", va="center",
                        color="white" if w > 0.6 else "black", fontsize=7)
    axes[0].set_ylabel("token reading (query)")
    fig.colorbar(image, ax=list(axes), fraction=0.02, pad=0.02, label="weight")
    fig.suptitle(suptitle)
    return axes


def head_reach(W_O, n_heads, title="Where each head can write", ax=None):
    """How strongly each head's output reaches each output coordinate through ``W_O``.

    Entry (i, c) is the length of column c of head i's block of rows,
    ``W_O[i*d_h:(i+1)*d_h, c]``; 0 means head i cannot change coordinate c at all.
    """
    W_O = np.asarray(W_O, dtype=float)
    d_h = W_O.shape[0] // n_heads
    blocks = W_O.reshape(n_heads, d_h, W_O.shape[1])               # (h, d_h, d_model)
    reach = np.linalg.norm(blocks, axis=1)                         # (h, d_model)
    ax = _axis(ax, size=(1.0 + 0.7 * W_O.shape[1], 1.2 + 0.6 * n_heads))
    image = ax.imshow(reach, cmap="Oranges", vmin=0.0, vmax=max(1.0, float(reach.max())))
    ax.set_xticks(range(W_O.shape[1]))
    ax.set_yticks(range(n_heads), [f"head {i}" for i in range(n_heads)])
    ax.set_xlabel("output coordinate (column of O)")
    ax.set_ylabel("head")
    ax.set_title(title, fontsize=10)
    for (i, c), r in np.ndenumerate(reach):
        ax.text(c, i, f"{r:.2f}", ha="center", va="center", fontsize=8,
                color="white" if r > 0.6 * max(1.0, float(reach.max())) else "black")
    ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="reach")
    return ax


def loglog_costs(lengths, series, title, ylabel, ax=None, slope=2, slope_label="∝ T² (slope 2)",
                 anchor=None, xlabel="context length T (tokens)"):
    """Costs against length on log–log axes, one line per series, with a dashed guide of ``slope``.

    ``series`` maps a label to values over ``lengths`` (or to ``(lengths, values)`` for a series
    measured at other lengths). The guide passes through the last point of the series named
    ``anchor`` (default: the first series), so a line parallel to it grows like ``T**slope``.
    """
    ax = _axis(ax, size=(5.5, 4.0))
    lengths = np.asarray(lengths, dtype=float)
    points = {}
    for label, values in series.items():
        xs, ys = (values if isinstance(values, tuple) else (lengths, values))
        xs, ys = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
        ax.loglog(xs, ys, "o-", label=label)
        points[label] = (xs, ys)
    if slope is not None and points:
        xs, ys = points[anchor if anchor is not None else next(iter(points))]
        guide = ys[-1] * (lengths / xs[-1]) ** slope
        ax.loglog(lengths, guide, "k--", lw=1, label=slope_label)
    if len(lengths) <= 12:                        # label the measured lengths themselves
        from matplotlib.ticker import NullFormatter

        ax.set_xticks(lengths, [f"{t:g}" for t in lengths])
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    return ax


def causal_tiles(T, block_size, title=None, ax=None):
    """The T × T grid of (query, key) pairs cut into tiles, as causal tiled attention visits it.

    Tiles wholly after the diagonal are never computed; tiles wholly before it are read whole;
    tiles the diagonal runs through are computed and then masked position by position (j <= i).
    """
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    i, j = np.indices((T, T))
    bi, bj = i // block_size, j // block_size
    kind = np.where(bj > bi, 0, np.where(bj < bi, 3, np.where(j <= i, 2, 1)))
    colours = ["white", "#d9d9d9", "tab:green", "tab:blue"]
    ax = _axis(ax, size=(5.2, 4.6))
    ax.imshow(kind, cmap=ListedColormap(colours), vmin=-0.5, vmax=3.5)
    for edge in range(block_size, T, block_size):
        ax.axhline(edge - 0.5, color="black", lw=1.2)
        ax.axvline(edge - 0.5, color="black", lw=1.2)
    ax.set_xlabel("key position j")
    ax.set_ylabel("query position i")
    ax.set_title(title or f"Causal tiles: T = {T}, block_size = {block_size}")
    labels = ["tile skipped (all j > i)", "masked inside a diagonal tile (j > i)",
              "read inside a diagonal tile (j <= i)", "tile read whole (all j <= i)"]
    ax.legend(handles=[Patch(facecolor=c, edgecolor="grey", label=l) for c, l in zip(colours, labels)],
              loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8)
    return ax
