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


def attention_heatmap(weights, queries, keys=None, title="Attention weights", ax=None,
                      annotate=True, cmap="Blues"):
    """Rows are the reading (query) tokens, columns the tokens read (keys); each row sums to 1."""
    weights = np.asarray(weights, dtype=float)
    keys = queries if keys is None else keys
    ax = _axis(ax)
    image = ax.imshow(weights, cmap=cmap, vmin=0.0, vmax=max(1.0, float(weights.max())))
    ax.set_xticks(range(len(keys)), keys)
    ax.set_yticks(range(len(queries)), queries)
    ax.set_xlabel("token being read (key)")
    ax.set_ylabel("token reading (query)")
    ax.set_title(title)
    if annotate:
        for (i, j), w in np.ndenumerate(weights):
            ax.text(j, i, f"{w:.3f}", ha="center", va="center",
                    color="white" if w > 0.6 else "black", fontsize=9)
    ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="weight")
    return ax


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


def vectors_2d(points, labels, moved=None, title="Token vectors", ax=None):
    """Arrows from the origin to each 2-D vector; ``moved`` maps a label to its new position."""
    points = np.asarray(points, dtype=float)
    ax = _axis(ax, size=(4.8, 4.2))
    for (x, y), label in zip(points, labels):
        ax.annotate("", xy=(x, y), xytext=(0, 0),
                    arrowprops=dict(arrowstyle="->", color="tab:blue", lw=1.8))
        ax.text(x, y, f" {label}", va="bottom", fontsize=10)
    for label, new in (moved or {}).items():
        start = points[labels.index(label)]
        new = np.asarray(new, dtype=float)
        ax.annotate("", xy=tuple(new), xytext=tuple(start),
                    arrowprops=dict(arrowstyle="->", color="tab:orange", lw=2, linestyle="--"))
        ax.plot(*new, "o", color="tab:orange")
        ax.text(*new, f" {label} in context", color="tab:orange", va="top", fontsize=10)
    span = np.abs(np.vstack([points, *[np.atleast_2d(v) for v in (moved or {}).values()]])).max()
    ax.set_xlim(-span * 1.25, span * 1.25)
    ax.set_ylim(-span * 0.25, span * 1.35)
    ax.axhline(0, color="grey", lw=0.5)
    ax.axvline(0, color="grey", lw=0.5)
    ax.set_aspect("equal")
    ax.set_xlabel("coordinate 1")
    ax.set_ylabel("coordinate 2")
    ax.set_title(title)
    return ax
