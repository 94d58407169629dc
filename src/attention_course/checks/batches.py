"""Leading batch dimensions: a function given a batch gives each item's answer."""
import numpy as np

from .. import forms
from .calls import _named_arguments, call, check_returns
from .failures import CheckFailed, _name_of


# ---------------------------------------------------------------- leading batch dimensions

def _batch_item(array, k):
    """Item ``k`` of a made-up batch built from ``array``: its rows rolled by ``k`` (its entries, for
    a vector), and its last axis reversed on every other round, so that the items differ."""
    array = np.asarray(array)
    axis = -2 if array.ndim >= 2 else -1
    item = np.roll(array, k, axis=axis)
    return item[..., ::-1] if (k // max(array.shape[axis], 1)) % 2 else item


#: The batches ``check_batch_axes`` tries, in the words of the hidden tests' cases.
BATCHES = (((2,), "one batch dimension"), ((2, 3), "two batch dimensions"))


def check_batch_axes(fn, args, batched, outputs, summed=(), **kwargs):
    """``fn`` works with no, one and two leading batch dimensions: the arguments at the positions
    ``batched`` are stacked into a batch of shape (2,), then (2, 3), of items that differ (the others
    are shared by every item), and each output is, item by item, what ``fn`` returns on that item
    alone (an output named in ``summed``, a parameter's gradient, is the sum over the items).

    ``outputs`` names the returned values (a tuple of names), or the one returned array (a string).
    Run it after the checks on single items: it compares ``fn`` with itself."""
    name = _name_of(fn)
    single = isinstance(outputs, str)
    names = (outputs,) if single else tuple(outputs)

    def returned(result):
        return (result,) if single else check_returns(name, result, names)

    for shape, words in BATCHES:
        items = [[_batch_item(a, k) if i in batched else a for i, a in enumerate(args)]
                 for k in range(int(np.prod(shape)))]
        alone = [returned(call(fn, *item, **kwargs)) for item in items]
        stacked = [np.stack([np.asarray(item[i]) for item in items]).reshape(*shape, *np.shape(args[i]))
                   if i in batched else a for i, a in enumerate(args)]
        described = ", ".join(f"{param} of shape {np.shape(value)}" for k, (param, value)
                              in enumerate(_named_arguments(fn, stacked, {})) if k in batched)
        try:
            together = returned(call(fn, *stacked, **kwargs))
        except CheckFailed as failure:
            failure.args = (f"With {words}: {failure}",)
            raise
        for out, got, each in zip(names, together, zip(*alone)):
            each = [np.asarray(v, dtype=float) for v in each]
            expected = (np.sum(each, axis=0) if out in summed
                        else np.stack(each).reshape(*shape, *each[0].shape))
            problem = forms.array_problem(f"{out} for {words} ({described})", got, expected.shape)
            if problem:
                raise CheckFailed(problem + ("" if out in summed else
                                             f" Leading batch dimensions come back in front, as they went in."))
            close = np.isclose(got, expected, rtol=1e-9, atol=1e-9, equal_nan=True)
            if not close.all():
                where = tuple(int(i) for i in np.argwhere(~close)[0])
                if out in summed:
                    raise CheckFailed(
                        f"{out} for {words} ({described}) is not the sum over the batch of what {name} returns "
                        f"for each item alone (first at index {where}): one set of weights serves every item, "
                        "so its gradient adds up the gradient of each.")
                item = where[:len(shape)]
                raise CheckFailed(
                    f"{out} for {words} ({described}) differs from what {name} returns for item {item} "
                    f"alone (first at index {where}). Each item of a batch must come out as it does on its "
                    "own: work on the last axes only (np.swapaxes(M, -1, -2), sizes read from the end such as "
                    "X.shape[-1]), so that batch axes in front are carried along untouched.")
    print(f"✓ {name} gives every item of a batch with one and with two batch dimensions what it gives that "
          "item alone")
