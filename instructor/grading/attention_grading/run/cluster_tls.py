"""The Dask cluster's certificates: only holders of the course's certificates talk to its cluster.

``make cluster-certs`` (``python -m attention_grading.cli.certs``) makes a certificate
authority of the course's own and one certificate per role, signed by it, in
``ClusterTLS.folder`` (``instructor/cluster-tls/`` by default, never committed):

- ``ca.pem``: the authority every party checks the others against; ``ca-key.pem`` signs and
  stays with the instructor;
- ``scheduler.pem``/``scheduler-key.pem`` for the scheduler's machine, ``worker.pem``/
  ``worker-key.pem`` for the workers' machines (both listen and connect: server and client use),
  ``client.pem``/``client-key.pem`` for ``make grade`` (client use only: it cannot serve).

Dask's TLS (``distributed.security.Security``) then authenticates both ends of every connection
(mutual TLS, ``require_encryption``): a scheduler, worker or client without a certificate of this
authority is refused before it sends a message.
"""
import datetime
import os
from pathlib import Path

from traitlets import Integer, Unicode
from traitlets.config import Configurable

from ..errors import ClusterError

ROLES = ("scheduler", "worker", "client")


class ClusterTLS(Configurable):
    """Where the cluster's certificates are, and how long new ones last."""

    folder = Unicode("instructor/cluster-tls", help="Folder of the Dask cluster's certificate authority and "
                     "per-role certificates (relative to the course root, or absolute); made by "
                     "`make cluster-certs`. Keep it on the instructor's side: its keys let anyone "
                     "drive the cluster.").tag(config=True)
    days = Integer(825, help="Days the certificates `make cluster-certs` makes stay valid.").tag(config=True)

    def path(self, root):
        """The folder, for the course at ``root``."""
        folder = Path(self.folder).expanduser()
        return folder if folder.is_absolute() else Path(root) / folder


def files(folder, role):
    """(certificate, key) paths of ``role`` ("ca" included) in ``folder``."""
    return Path(folder) / f"{role}.pem", Path(folder) / f"{role}-key.pem"


def _key():
    from cryptography.hazmat.primitives.asymmetric import ec

    return ec.generate_private_key(ec.SECP256R1())


def _write(path, data, mode):
    """Write ``data`` to a new file of ``mode`` (never readable by others, even for a moment)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.chmod(path, mode)


def _pem_key(key):
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _certificate(subject_key, name, issuer_key, issuer_name, days, *, ca=False, usages=()):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "attention course"),
                         x509.NameAttribute(NameOID.COMMON_NAME, name)])
    issuer = subject if issuer_name is None else issuer_name
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
               .public_key(subject_key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=days))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(subject_key.public_key()), critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()),
                              critical=False))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=False, content_commitment=False, key_encipherment=False, data_encipherment=False,
            key_agreement=False, key_cert_sign=True, crl_sign=True, encipher_only=False, decipher_only=False),
            critical=True)
    else:
        oids = {"server": ExtendedKeyUsageOID.SERVER_AUTH, "client": ExtendedKeyUsageOID.CLIENT_AUTH}
        builder = (builder.add_extension(x509.KeyUsage(
            digital_signature=True, content_commitment=False, key_encipherment=False, data_encipherment=False,
            key_agreement=False, key_cert_sign=False, crl_sign=False, encipher_only=False, decipher_only=False),
            critical=True)
            .add_extension(x509.ExtendedKeyUsage([oids[u] for u in usages]), critical=False)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False))
    return builder.sign(issuer_key, hashes.SHA256()), subject


# What each role's certificate may be used for: the scheduler and workers listen and connect.
USAGES = {"scheduler": ("server", "client"), "worker": ("server", "client"), "client": ("client",)}


def make_certificates(folder, days=825, force=False):
    """A certificate authority and one certificate per role in ``folder`` (made, mode 700);
    returns the paths written. Existing files are kept unless ``force``."""
    from cryptography.hazmat.primitives import serialization

    folder = Path(folder)
    present = [p for role in ("ca", *ROLES) for p in files(folder, role) if p.exists()]
    if present and not force:
        raise ClusterError(f"{folder} already holds the cluster's certificates ({', '.join(p.name for p in present)}). "
                           "Nothing was changed. Pass --force to make new ones (every scheduler, worker "
                           "and make grade then needs the new files).")
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    ca_key = _key()
    ca_cert, ca_name = _certificate(ca_key, "attention course cluster authority", ca_key, None, days, ca=True)
    pem = serialization.Encoding.PEM
    ca_pem, ca_key_pem = files(folder, "ca")
    _write(ca_pem, ca_cert.public_bytes(pem), 0o644)
    _write(ca_key_pem, _pem_key(ca_key), 0o600)
    written = [ca_pem, ca_key_pem]
    for role in ROLES:
        key = _key()
        cert, _ = _certificate(key, f"attention-{role}", ca_key, ca_name, days, usages=USAGES[role])
        cert_path, key_path = files(folder, role)
        _write(cert_path, cert.public_bytes(pem), 0o644)
        _write(key_path, _pem_key(key), 0o600)
        written += [cert_path, key_path]
    return written


def security(folder, role="client"):
    """Dask's ``Security`` for ``role`` with the course's certificates in ``folder``: mutual TLS,
    encryption required. Raises ``ClusterError`` naming what is missing."""
    from distributed.security import Security

    ca, _ = files(folder, "ca")
    cert, key = files(folder, role)
    missing = [p for p in (ca, cert, key) if not p.is_file()]
    if missing:
        raise ClusterError(f"the Dask cluster's TLS certificates are missing ({', '.join(map(str, missing))}). "
                           "Nothing was graded. Make them with `make cluster-certs` and start the scheduler and "
                           "workers with them (docs/instructor-guide.md: Grading a large class on a Dask cluster).")
    return Security(require_encryption=True, tls_ca_file=str(ca), **{f"tls_{role}_cert": str(cert),
                                                                       f"tls_{role}_key": str(key)})
