"""What ``cluster.refuse_pickles`` relies on in distributed, which is not distributed's public API:
where its unpickling function lives and how it is called, which names the client keeps for it, and
that the patched function is the one that reads what arrives. pyproject.toml bounds distributed and
dask to the releases these tests passed on; a new release that moves any of it fails here first."""
import ast
import asyncio
import importlib
import inspect
import pickle
import pkgutil

import pytest

from attention_grading.run.cluster import RefusedPickle, data_only_loads, refuse_pickles

from .test_job_wire import Evil

#: The modules of distributed that read what reaches the grader's client (its comms, the
#: framing, the serialisers, the client itself); optional ones whose library is missing are skipped.
RECEIVING = ("distributed.client", "distributed.core", "distributed.batched", "distributed.utils_comm")
#: Decoders that build plain data only, never an object of a class a message names.
DATA_ONLY = ("msgpack", "json", "distributed.protocol.core.loads")


@pytest.fixture
def refused(monkeypatch):
    """``refuse_pickles`` for one test: the names it replaces are put back afterwards."""
    import distributed.client
    import distributed.protocol.pickle

    for module, name in ((distributed.protocol.pickle, "loads"), (distributed.client, "loads"),
                         (distributed.client, "pickle")):
        monkeypatch.setattr(module, name, getattr(module, name))
    refuse_pickles()


def test_the_patched_function_is_where_and_what_the_patch_expects():
    """``distributed.protocol.pickle.loads(x, *, buffers=())``; the client imported it as ``loads``
    and calls the standard library's ``pickle.loads`` by that module's name; the protocol's modules
    look ``loads`` up on ``distributed.protocol.pickle`` when they call it, so replacing it there
    reaches them."""
    import distributed.client
    import distributed.core
    import distributed.protocol
    import distributed.protocol.pickle

    loads = distributed.protocol.pickle.loads
    assert list(inspect.signature(loads).parameters.items()) == list(
        inspect.signature(lambda x, *, buffers=(): None).parameters.items())
    assert list(inspect.signature(data_only_loads).parameters) == ["data", "buffers"]
    assert distributed.client.loads is loads and distributed.client.pickle is pickle
    for name in ("core", "serialize", "numpy"):     # (the package's own names hide some of these modules)
        module = importlib.import_module(f"distributed.protocol.{name}")
        assert module.pickle is distributed.protocol.pickle, module.__name__
    assert distributed.core.protocol is distributed.protocol and distributed.protocol.pickle.loads is loads


def _receiving_modules():
    import distributed.comm
    import distributed.protocol

    names = list(RECEIVING)
    names += [f"distributed.protocol.{m.name}" for m in pkgutil.iter_modules(distributed.protocol.__path__)
              if m.name != "pickle"]          # the patched function's own module
    names += [f"distributed.comm.{m.name}" for m in pkgutil.iter_modules(distributed.comm.__path__)]
    for name in names:
        try:
            yield importlib.import_module(name)
        except ImportError:                   # cupy, torch, pyarrow...: not installed, never used here
            continue


def _callee(module, expression):
    """What ``expression`` (a dotted name, as called) is in ``module``'s globals, or None when its
    first name is not a global (a local: a serialiser family's or a type's own decoder)."""
    first, *rest = expression.split(".")
    if first not in vars(module):
        return None
    value = vars(module)[first]
    for name in rest:
        value = getattr(value, name)
    return value


def test_every_unpickling_call_on_the_receiving_side_goes_through_the_patch(refused):
    """Each call of a ``loads`` in the modules that read what reaches the client is, once patched,
    ``data_only_loads`` or a decoder of plain data (msgpack, JSON, the framing): a call site that
    unpickles through anything else (a new import of ``pickle.loads`` or ``cloudpickle.loads``)
    fails here, with its place."""
    unpatched, seen = [], 0
    for module in _receiving_modules():
        for node in ast.walk(ast.parse(inspect.getsource(module))):
            if not isinstance(node, ast.Call):
                continue
            called = ast.unparse(node.func)
            if called != "loads" and not called.endswith(".loads"):
                continue
            seen += 1
            value = _callee(module, called)
            where = f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', '')}"
            if value is None or value is data_only_loads or where.startswith(DATA_ONLY) \
                    or getattr(value, "__name__", "") == "unpackb":        # msgpack's C decoder
                continue
            unpatched.append(f"{module.__name__}:{node.lineno} {called} -> {where}")
    assert seen >= 10, f"only {seen} calls of loads found: the scan no longer sees distributed's code"
    assert not unpatched, unpatched


async def _received_over_tcp(message):
    """``message`` written by one distributed comm and read, deserialised, by another, over TCP on
    loopback (the listener's port chosen by the system); what was read, or the error reading it."""
    from distributed.comm import connect, listen

    read = asyncio.get_running_loop().create_future()

    async def handle(comm):
        try:
            read.set_result(await comm.read())
        except Exception as exc:              # what the reading side raised
            read.set_exception(exc)
        finally:
            await comm.close()

    listener = listen("tcp://127.0.0.1:0", handle, deserialize=True)
    await listener.start()
    try:
        comm = await connect(listener.contact_address, timeout=60)
        try:
            await comm.write(message)
            return await asyncio.wait_for(read, 120)
        finally:
            await comm.close()
    finally:
        listener.stop()


def test_a_pickle_that_arrives_is_read_by_the_patched_function(refused, tmp_path, monkeypatch):
    """A message from the cluster holding a pickle that would run a command: read through the
    patched function, which refuses it (nothing runs); the same message unpatched runs it (the
    control: the path really unpickles what arrives)."""
    import distributed.protocol.pickle
    from distributed.protocol import to_serialize

    marker = tmp_path / "ran"
    with pytest.raises(RefusedPickle, match="system"):
        asyncio.run(_received_over_tcp({"op": "result", "value": to_serialize(Evil(marker))}))
    assert not marker.exists()
    monkeypatch.undo()                        # the control: distributed as it ships
    assert distributed.protocol.pickle.loads is not data_only_loads
    asyncio.run(_received_over_tcp({"op": "result", "value": to_serialize(Evil(marker))}))
    assert marker.exists()
