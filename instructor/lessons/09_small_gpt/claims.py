"""Lesson 09's claims in words and the computed values that back them (tests/test_lesson_text.py):
``[(words of the prose, an expression over the notebook's variables)]``. The words must stay in the
lesson, and the expression must hold when the notebook runs."""
CLAIMS = [
    ("Knowing which character came last is worth more than a full bit per character",
     "baselines['unigram counts'] - baselines['bigram counts'] > 1"),
    ("Up to rounding, the reads are identical",
     "max(np.abs(read_of('stop') - read_of(w)).max() for w in ('pots', 'tops')) < 1e-12"),
    ("along each diagonal of the similarity matrix (a fixed distance\nbetween positions) the dot product does not "
     "change at all", "max(band) < 1e-9"),
    ("with the encoding added, what the *p* reads differs",
     "np.abs(read_of('stop', positions=P16) - read_of('tops', positions=P16)).max() > 0.01"),
    ("the gap between them is the second block's doing",
     "histories['2 blocks']['val'][-1] < histories['1 block']['val'][-1]"),
    ("the validation score falls with the training loss",
     "all(h['val'][-1] < h['val'][0] and np.mean(h['loss'][-50:]) < np.mean(h['loss'][:50]) "
     "for h in histories.values())"),
    ("its peak grows much\nfaster than the length", "growth_rerun > 2 * lengths[-1] / lengths[0]"),
    ("the cache's peak grows by about\na fixed number of bytes per token",
     "np.abs(np.diff(peaks['with a KV cache']) / np.diff(lengths) / growth - 1).max() < 0.2"),
    ("the predicted ratio of\nmultiplications rises with it",
     "all(per_token_rerun(np.arange(1, a + 1)).sum() / per_token_with_cache(np.arange(1, a + 1)).sum() < "
     "per_token_rerun(np.arange(1, b + 1)).sum() / per_token_with_cache(np.arange(1, b + 1)).sum() "
     "for a, b in zip(lengths, lengths[1:]))"),
    ("one and two blocks beat the counting baselines by a wide margin",
     "all(h['val'][-1] / np.log(2) < baselines['bigram counts'] - 0.3 for h in histories.values())"),
    ("its first scene and the first lines of the second close the training set",
     "text.index('SCENE 1', tempest) < text.index('SCENE 2', tempest) < len(train_ids) < "
     "text.index('SCENE 2', tempest) + 500 and len(val_ids) == len(text) - len(train_ids)"),
    ("The heads of\nthe first block stay close to the reading character: they look back a character or two on\n"
     "average and put much of their weight on the previous character",
     "max(looks_back[0]) < 2.5 and min(on_previous[0]) > 0.25"),
    ("The heads of\nthe second block look further back", "min(looks_back[1]) > max(looks_back[0])"),
]
