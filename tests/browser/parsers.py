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


def parse_sampling(text):
    """Lesson 09's explorer: 'temperature 1.00, no top-k: 76 characters can be drawn, entropy 2.1 bits.
    Next character, probability (share of your 2000 draws): e 0.310 (0.305) · ␣ 0.120 (0.118) · …'."""
    match = re.fullmatch(r"temperature ([\d.]+), (no top-k|top_k = \d+): (\d+) characters? can be drawn, entropy "
                         r"([\d.]+) bits\. Next character, probability \(share of your (\d+) draws\): (.*)",
                         text.strip(), flags=re.DOTALL)
    assert match, f"unexpected explorer text: {text!r}"
    temperature, cut, kept, entropy, draws, parts = match.groups()
    rows = [re.fullmatch(r"(.) ([\d.]+) \(([\d.]+)\)", part) for part in parts.split(" · ")]
    assert all(rows), f"unexpected explorer text: {text!r}"
    return {"temperature": float(temperature), "top_k": None if cut == "no top-k" else int(cut.split("= ")[1]),
            "kept": int(kept), "entropy": float(entropy), "draws": int(draws),
            "chars": [r.group(1) for r in rows],
            "probabilities": np.array([float(r.group(2)) for r in rows]),
            "shares": np.array([float(r.group(3)) for r in rows])}
