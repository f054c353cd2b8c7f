"""The lab's TLS: a certificate authority of its own and one certificate per role, so that
only machines holding the lab's files take part in a Dask study.

``fslab lab init DIR`` writes (directory 0700, private keys 0600)::

    ca.pem, ca-key.pem                 the lab's CA (keep ca-key.pem off the test machines)
    scheduler.pem, scheduler-key.pem   for `fslab scheduler --tls DIR --host HOST`
    worker.pem, worker-key.pem         for `fslab worker tls://HOST:PORT --tls DIR`
    driver.pem, driver-key.pem         for `fslab run --executor tls://HOST:PORT --tls DIR`

Every connection is mutually authenticated (Dask's TLS: both ends present a certificate
and require one signed by ``ca.pem``); host names are not checked (labs use addresses), so
what admits a machine is holding a key signed by this CA. A plaintext scheduler
(``tcp://``, ``dask://``) lets anyone who reaches its port run code as root on every
worker; it is refused unless ``--insecure`` says so (:func:`scheduler_access`).
"""

from __future__ import annotations

import dataclasses
import datetime
import ipaddress
import os
import socket
import ssl
import stat
import time
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from ..errors import FslabError, MissingCapability, SpecError

Role = Literal["scheduler", "worker", "driver"]
ROLES: tuple[Role, ...] = ("scheduler", "worker", "driver")
CA_FILE = "ca.pem"
CA_KEY_FILE = "ca-key.pem"
DEFAULT_DAYS = 825  # certificates' life; `fslab lab init --days` changes it
PROBE_TIMEOUT_S = 5.0
REACH_S = 30.0  # a scheduler still starting (Dask's own connect timeout)
INIT_COMMAND = "fslab lab init DIR"


def cert_file(role: str) -> str:
    return f"{role}.pem"


def key_file(role: str) -> str:
    return f"{role}-key.pem"


@dataclasses.dataclass(frozen=True)
class LabFiles:
    """The lab files one role uses, checked present and its key private."""

    directory: Path
    role: Role

    @property
    def ca(self) -> Path:
        return self.directory / CA_FILE

    @property
    def cert(self) -> Path:
        return self.directory / cert_file(self.role)

    @property
    def key(self) -> Path:
        return self.directory / key_file(self.role)

    def check(self) -> LabFiles:
        """Raise SpecError naming a missing file or a key others can read."""
        for path in (self.ca, self.cert, self.key):
            if not path.is_file():
                raise SpecError(f"--tls {self.directory}: {path.name} is missing (a {self.role} needs "
                                f"{CA_FILE}, {self.cert.name} and {self.key.name}); make a lab with "
                                f"`{INIT_COMMAND}` and copy those files here")
        mode = stat.S_IMODE(self.key.stat().st_mode)
        if mode & 0o077:
            raise SpecError(f"--tls {self.directory}: {self.key} is readable by others (mode {mode:04o}); "
                            f"`chmod 600 {self.key}`")
        return self

    def security(self) -> Any:
        """Dask's Security for this role: TLS only, this CA, this role's certificate."""
        from distributed.security import Security

        files = {"tls_ca_file": str(self.ca), "require_encryption": True}
        if self.role == "driver":
            files |= {"tls_client_cert": str(self.cert), "tls_client_key": str(self.key)}
        elif self.role == "worker":
            files |= {"tls_worker_cert": str(self.cert), "tls_worker_key": str(self.key)}
        else:
            files |= {"tls_scheduler_cert": str(self.cert), "tls_scheduler_key": str(self.key)}
        return Security(**files)

    def ssl_context(self) -> ssl.SSLContext:
        """A client context as Dask makes it: this CA required of the peer, our certificate
        offered, no host-name check."""
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(self.ca))
        context.check_hostname = False
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_cert_chain(str(self.cert), str(self.key))
        return context


@dataclasses.dataclass(frozen=True)
class Access:
    """How to reach a scheduler: its Dask address and, for TLS, this role's lab files."""

    address: str  # tls://HOST:PORT or tcp://HOST:PORT
    lab: LabFiles | None  # None: plaintext, allowed by --insecure

    @property
    def insecure(self) -> bool:
        return self.lab is None

    def security(self) -> Any:
        return None if self.lab is None else self.lab.security()

    def flags(self) -> list[str]:
        """The command-line flags that give this access again (for printed commands)."""
        return ["--insecure"] if self.lab is None else ["--tls", str(self.lab.directory)]

    def warning(self) -> str | None:
        """What --insecure allows, said once where it is used."""
        if self.lab is not None:
            return None
        return (f"--insecure: {self.address} is a plaintext Dask scheduler: anyone who can reach it "
                "can run code as root on every worker of it; use it only on a network no one else "
                f"can reach (tls:// with --tls DIR from `{INIT_COMMAND}` closes it)")


def scheduler_access(flag: str, url: str, role: Role, tls: Path | None, insecure: bool) -> Access:
    """The scheduler ``url`` (``tls://``, ``tcp://``, ``dask://`` (= tcp) or ``HOST:PORT``:
    tls with ``--tls``, tcp without) as ``role`` reaches it. Raises SpecError for a plaintext
    scheduler without ``insecure``, a tls one without ``tls``, or the two mixed; ``flag``
    names the option in the messages."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = ("tls" if tls is not None else "tcp"), url
    scheme = {"dask": "tcp"}.get(scheme, scheme)
    parts = urlsplit(f"x://{rest}")
    if scheme not in ("tls", "tcp") or not parts.hostname or parts.port is None:
        raise SpecError(f"{flag} {url!r}: give the scheduler as tls://HOST:PORT (with --tls DIR) or, "
                        "on a network no one else can reach, tcp://HOST:PORT with --insecure "
                        "(e.g. tls://10.0.0.5:8786)")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    where = f"{host}:{parts.port}"
    if scheme == "tcp":
        if tls is not None:
            raise SpecError(f"{flag} {url!r} is plaintext but --tls {tls} was given: use tls://{where}")
        if not insecure:
            raise SpecError(
                f"{flag} {url!r}: a plaintext scheduler is refused: pass --insecure to allow anyone who "
                f"can reach {where} to run code as root on your workers, or use tls://{where} with "
                f"--tls DIR from `{INIT_COMMAND}`")
        return Access(f"tcp://{where}", None)
    if insecure:
        raise SpecError(f"{flag} {url!r} is TLS: --insecure allows nothing here; drop it")
    if tls is None:
        raise SpecError(f"{flag} {url!r}: a TLS scheduler needs the lab's certificates: --tls DIR "
                        f"(made by `{INIT_COMMAND}`)")
    return Access(f"tls://{where}", LabFiles(tls.resolve(), role).check())


def probe(access: Access, timeout_s: float = PROBE_TIMEOUT_S, reach_s: float = REACH_S) -> None:
    """Before Dask connects (and retries until its timeout with a vague message): one TLS
    handshake with the scheduler, raising FslabError that says which side refused whom.
    A scheduler not listening yet is tried again for ``reach_s`` seconds (as Dask would).
    Plaintext access is not probed."""
    if access.lab is None:
        return
    parts = urlsplit(access.address)
    host, port = parts.hostname or "", parts.port or 0
    context = access.lab.ssl_context()
    give_up = time.monotonic() + reach_s
    while True:
        try:
            raw = socket.create_connection((host, port), timeout=timeout_s)
            break
        except OSError as exc:
            if time.monotonic() > give_up:
                raise FslabError(f"cannot reach the Dask scheduler at {access.address} "
                                 f"(tried for {reach_s:.0f} s): {exc}") from None
            time.sleep(0.5)
    with raw:
        try:
            with context.wrap_socket(raw) as tls:
                # TLS 1.3: the server judges our certificate after our side's handshake ends
                # and says so in its first record; an accepted peer gets Dask's greeting.
                tls.settimeout(timeout_s)
                try:
                    tls.recv(1)
                except TimeoutError:
                    pass
        except ssl.SSLCertVerificationError as exc:
            raise FslabError(
                f"the scheduler at {access.address} is not of this lab: its certificate is not signed by "
                f"{access.lab.ca} ({exc.verify_message}); use the {CA_FILE} of the lab the scheduler's "
                "certificate came from") from None
        except ssl.SSLError as exc:
            raise FslabError(
                f"the scheduler at {access.address} refused this {access.lab.role}'s certificate "
                f"{access.lab.cert} ({exc.reason or exc}): it is not from the scheduler's lab; copy that "
                f"lab's {CA_FILE}, {access.lab.cert.name} and {access.lab.key.name} here") from None
        except OSError as exc:
            raise FslabError(f"the scheduler at {access.address} closed the TLS connection: {exc}; "
                             "is it a TLS scheduler (`fslab scheduler --tls DIR`)?") from None


def init_lab(directory: Path, days: int = DEFAULT_DAYS, common_name: str = "fslab lab") -> list[Path]:
    """Make a lab CA and a certificate per role in ``directory`` (made 0700; keys 0600).
    Refuses a directory that already holds a lab (its CA would be replaced). Returns the
    files written. Raises MissingCapability without the `cryptography` package."""
    try:
        from cryptography import x509  # noqa: F401
    except ImportError:
        raise MissingCapability("fslab lab init needs the `cryptography` package",
                                fix="pip install 'fslab[dask]'") from None
    if (directory / CA_FILE).exists() or (directory / CA_KEY_FILE).exists():
        raise FslabError(f"{directory} already holds a lab ({CA_FILE}): not replaced (its certificates "
                         "would stop working); choose another directory")
    directory.mkdir(parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    ca_key, ca_cert = _make_ca(common_name, days)
    written = [_write(directory / CA_KEY_FILE, _key_pem(ca_key), private=True),
               _write(directory / CA_FILE, _cert_pem(ca_cert), private=False)]
    for role in ROLES:
        key, cert = _make_leaf(f"{common_name} {role}", role, ca_key, ca_cert, days)
        written.append(_write(directory / key_file(role), _key_pem(key), private=True))
        written.append(_write(directory / cert_file(role), _cert_pem(cert), private=False))
    return written


def _write(path: Path, data: bytes, private: bool) -> Path:
    """Create ``path`` with its final mode from the start (a key is never world-readable)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(path, 0o600 if private else 0o644)
    return path


def _new_key() -> Any:
    from cryptography.hazmat.primitives.asymmetric import ec

    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _cert_pem(cert: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return cert.public_bytes(serialization.Encoding.PEM)


def _name(common_name: str) -> Any:
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "fslab"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _builder(subject: Any, issuer: Any, public_key: Any, days: int) -> Any:
    from cryptography import x509

    now = datetime.datetime.now(datetime.UTC)
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))  # clocks of other machines
            .not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False))


def _make_ca(common_name: str, days: int) -> tuple[Any, Any]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes

    key = _new_key()
    name = _name(f"{common_name} CA")
    cert = (_builder(name, name, key.public_key(), days)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    return key, cert


def _make_leaf(common_name: str, role: str, ca_key: Any, ca_cert: Any, days: int) -> tuple[Any, Any]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import ExtendedKeyUsageOID

    key = _new_key()
    # Dask's peers are both servers and clients (a worker listens and connects).
    cert = (_builder(_name(common_name), ca_cert.subject, key.public_key(), days)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                         crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                  ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(f"fslab-{role}"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    return key, cert
