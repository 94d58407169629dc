"""Run attempts inside a fresh sandbox and report each outcome (used by tests/test_sandbox.py).

Usage: python sandbox_probe.py <request.json>. The request names the grading code folder, the
scratch folder, the paths that must stay out of view, the channel sockets its waiter binds for it
(``sockets`` in the attempts: {endpoint: inherited file descriptor}), an account to switch to,
what libseccomp made of this machine (the filter's program and the system calls' numbers, as the
grader hands them to a kernel's policy), and the attempts: {name: Python source}. Each attempt runs in the
sandbox and reports ``{"ok": repr of its value}`` or ``{"error": exception class name}``; the
script prints the JSON of all of them. Runs as its own process (it forks, which a multi-threaded
pytest process should not) and needs nothing but the standard library.
"""
import json
import os
import sys


def main(path):
    with open(path) as fh:
        request = json.load(fh)
    sys.path.insert(0, request["grading_dir"])
    from attention_grading.kernels.sandbox import Limits, kernel_environment, make
    from attention_grading.kernels.sandbox.spawn import fork_sandboxed

    scratch = request["scratch"]
    env = kernel_environment(dict(os.environ), os.path.join(scratch, "sandbox"))
    limits = Limits(**request.get("limits", {}))
    policy = make(scratch, request.get("channels", []), env, seed=request.get("seed"),
                  protected=request.get("protected", []), account=request.get("account"), limits=limits,
                  seccomp_filter=request["seccomp_filter"], syscalls=request["syscalls"])

    def attempts(report, sockets):
        outcomes = {}
        for name, source in request["attempts"].items():
            namespace = {"sockets": sockets}
            try:
                exec(compile(source, name, "exec"), namespace)
                outcomes[name] = {"ok": repr(namespace.get("result"))[:2000]}
            except BaseException as exc:      # noqa: BLE001 (every refusal is an outcome)
                outcomes[name] = {"error": type(exc).__name__, "detail": str(exc)[:300]}
        report(json.dumps(outcomes))
        os._exit(0)

    pid, status = fork_sandboxed(policy, attempts)
    print(json.dumps({"pid": pid, "status": status}))


if __name__ == "__main__":
    main(sys.argv[1])
