"""Parse the text lines of the lesson widgets (explorers) into numbers."""
import re

import numpy as np


def parse_read(text):
    """Lesson 02's explorer: '"it" reads (causal): The 0.127 · cat 0.559 · ... → output [0.230, 0.681]'."""
    match = re.fullmatch(r'"(\w+)" reads \((causal|no mask)\): (.*) → output \[(.*)\]', text.strip())
    assert match, f"unexpected explorer text: {text!r}"
    query, mask, shares, output = match.groups()
    pairs = [s.rsplit(" ", 1) for s in shares.split(" · ")]
    return {"query": query, "causal": mask == "causal", "tokens": [t for t, _ in pairs],
            "weights": np.array([float(w) for _, w in pairs]),
            "output": np.array([float(v) for v in output.split(",")])}


def parse_saturation(text):
    """Lesson 03's explorer: 'd_k = 64, divisor 8: weights [...]; max weight 0.5, entropy 1.2 nats'."""
    match = re.search(r"d_k = (\d+), divisor ([\d.e+-]+): weights \[(.*)\]; max weight ([\d.]+), "
                      r"entropy ([\d.]+) nats", text)
    assert match, f"unexpected explorer text: {text!r}"
    d_k, divisor, weights, max_weight, entropy = match.groups()
    return {"d_k": int(d_k), "divisor": float(divisor),
            "weights": np.array([float(w) for w in weights.split(",")]),
            "max_weight": float(max_weight), "entropy": float(entropy)}


def parse_cat_weights(text):
    """Lesson 01's printout "cat's weights: [0.432 0.389 0.179]" → [0.432, 0.389, 0.179]."""
    shown = re.search(r"cat's weights: \[([^\]]*)\]", text)
    assert shown, text
    return [float(v) for v in shown.group(1).split()]
