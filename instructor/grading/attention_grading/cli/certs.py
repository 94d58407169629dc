"""``make cluster-certs``: the Dask cluster's certificate authority and per-role certificates
(``run.cluster_tls``), and how to start a scheduler and workers with them.

Usage: python -m attention_grading.cli.certs [--root DIR] [--folder DIR] [--force]
"""
import argparse
import sys
from pathlib import Path

from ..course import load_config
from ..errors import exit_status
from ..paths import COURSE_ROOT
from ..run.cluster_tls import ClusterTLS, make_certificates


def main(argv=None):
    parser = argparse.ArgumentParser(description="Make the Dask cluster's certificate authority and per-role "
                                                 "certificates (scheduler, worker, client).")
    parser.add_argument("--root", default=None, help="course folder (default: this course)")
    parser.add_argument("--folder", default=None, help="where to write them (default: ClusterTLS.folder, "
                                                       "instructor/cluster-tls/ of the course)")
    parser.add_argument("--force", action="store_true", help="replace certificates that exist")
    args = parser.parse_args(argv)
    root = Path(args.root or COURSE_ROOT).resolve()
    settings = ClusterTLS(config=load_config(root))
    folder = Path(args.folder).resolve() if args.folder else settings.path(root)
    status = exit_status(lambda: make_certificates(folder, settings.days, args.force))
    if status:
        return status
    print(f"""Wrote the Dask cluster's certificates to {folder}/ (valid {settings.days} days).
Copy to the scheduler's machine: ca.pem scheduler.pem scheduler-key.pem, and start it with
  dask scheduler --tls-ca-file ca.pem --tls-cert scheduler.pem --tls-key scheduler-key.pem --port 8786
Copy to each worker's machine: ca.pem worker.pem worker-key.pem, and start it with
  dask worker tls://HOST:8786 --tls-ca-file ca.pem --tls-cert worker.pem --tls-key worker-key.pem --nthreads 1
Then grade with: make grade GRADE_ARGS="--scheduler tls://HOST:8786"
Keep ca-key.pem and client-key.pem with you: whoever holds them can drive the cluster.""")
    return 0


if __name__ == "__main__":
    sys.exit(main())
