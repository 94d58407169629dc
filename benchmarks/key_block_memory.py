"""What lesson 08's key-block call measures, per answer style, in real grading kernels: each answer
is graded by ``make grade`` (``attention_grading.cli.grade``) in a scratch copy of the course, one
submission per draw (a comment in the answer changes the draw), and a copy of the spec in that
scratch course writes down each key-block call's figure as the judge reads it. It prints, per
style, the sizes drawn, the most the sandbox took during the call, what is left beyond the
allowance the judge takes off (what any call takes in a fresh kernel and copies of the inputs as
the probe receives them), the limit (half of one float64 score for every key, for one query of
each sequence) and the points. Not a timed test: run it idle and under load
(``/work/shared/tools/with-cpu-load 2 -- ...``) to see the margin.

Usage: python benchmarks/key_block_memory.py [--draws 3] [--styles solution,key_blocks_only,...]
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lesson08_styles import LESSON, graded_figures, options  # noqa: E402  (puts tests/ and the grader on sys.path)

#: A style no catalogue entry has: one query row at a time, over blocks of keys (slow, lean).
ONE_ROW_OVER_KEY_BLOCKS = '''
def tiled_attention(Q, K, V, block_size=64, causal=False):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    T_q, T_k = Q.shape[-2], K.shape[-2]
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    O = np.empty(batch + (T_q, V.shape[-1]))
    for i in range(T_q):
        m, l, acc = np.full(batch, -np.inf), np.zeros(batch), np.zeros(batch + (V.shape[-1],))
        last = i + 1 if causal else T_k
        for k0 in range(0, last, block_size):
            k1 = min(k0 + block_size, last)
            s = np.einsum("...d,...kd->...k", Q[..., i, :], K[..., k0:k1, :]) / np.sqrt(K.shape[-1])
            m_new = np.maximum(m, s.max(axis=-1))
            p, c = np.exp(s - m_new[..., None]), np.exp(m - m_new)
            l = c * l + p.sum(axis=-1)
            acc = c[..., None] * acc + np.einsum("...k,...kd->...d", p, V[..., k0:k1, :])
            m = m_new
        O[..., i, :] = acc / l[..., None]
    return O
'''
LOGGED = "    own = result[\"peak\"] - CALL_OVERHEAD - INPUT_COPIES * inputs\n"


def answers():
    import catalogue

    module = catalogue.load(LESSON)
    return {"solution": None, **module.CORRECT["tiled_attention"], "one_row_over_key_blocks": ONE_ROW_OVER_KEY_BLOCKS,
            **{name: module.WRONG["tiled_attention"][name]
               for name in ("row_at_a_time_ignores_block_size", "query_blocks_with_all_keys")}}


def logging_line(log):
    """The line the scratch spec gets after ``LOGGED``: the judge's figures, one JSON line to ``log``."""
    return (f"    open({str(log)!r}, 'a').write(__import__('json').dumps(dict(peak=result['peak'], own=own, "
            "batch=batch, T_q=T_q, T_k=T_k, block_size=block_size)) + '\\n')\n")


def main():
    known = answers()
    chosen = options(__doc__, known)
    print(f"{'style':<34} {'batch':>5} {'T_q':>3} {'T_k':>6} {'B':>3} {'peak MB':>8} {'beyond MB':>9} "
          f"{'limit MB':>8} {'points':>6}")
    for style, figures, points in graded_figures("attention-key-blocks-", LOGGED, logging_line, known,
                                                 chosen.styles.split(","), chosen.draws,
                                                 "the key-block judge changed: update this benchmark"):
        for f in figures:
            print(f"{style:<34} {f['batch']:>5} {f['T_q']:>3} {f['T_k']:>6} {f['block_size']:>3} "
                  f"{f['peak'] / 1e6:>8.2f} {f['own'] / 1e6:>9.2f} {4 * f['batch'] * f['T_k'] / 1e6:>8.2f} "
                  f"{points:>6}", flush=True)
        if not figures:
            print(f"{style:<34} (no key-block figure: the cases failed first) points {points}", flush=True)


if __name__ == "__main__":
    main()
