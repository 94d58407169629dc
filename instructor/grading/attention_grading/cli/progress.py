"""The progress bars of ``make grade`` (on stderr; none for nothing to do)."""
import sys


def progress(total, desc):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="nb", dynamic_ncols=True, file=sys.stderr,
                disable=total == 0, smoothing=0.1)
