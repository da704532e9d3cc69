"""A private certificate authority and a server certificate for a relay's NATS server.

``desktop-approver relay setup`` makes them when the person brings no certificate of their own:
a CA used for nothing else (its key can sign only server certificates for the relay, and stays
with the setup's files), and a server certificate for the names and addresses the server is
reached at (the host names are checked by every client, :mod:`.secure`). ECDSA P-256: small,
fast, and what every TLS library speaks. Needs ``cryptography`` (the ``relay`` extra).
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass

CA_DAYS = 3650
SERVER_DAYS = 825
"""What browsers accept for a server certificate; a client here accepts any the CA signed, but a
shorter life bounds what a stolen server key is worth."""


@dataclass(frozen=True)
class Pem:
    certificate: bytes
    key: bytes


def _name(common_name: str) -> object:
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "desktop-approver relay"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _pem(certificate: object, key: object) -> Pem:
    from cryptography.hazmat.primitives import serialization

    return Pem(certificate.public_bytes(serialization.Encoding.PEM),  # type: ignore[attr-defined]
               key.private_bytes(serialization.Encoding.PEM,  # type: ignore[attr-defined]
                                 serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))


def make_ca(common_name: str = "desktop-approver relay CA") -> Pem:
    """A self-signed CA that may sign server certificates only (path length 0)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    name = _name(common_name)
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name)  # type: ignore[arg-type]
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=CA_DAYS))
                   .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                   .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False,
                                                key_encipherment=False, data_encipherment=False, key_agreement=False,
                                                key_cert_sign=True, crl_sign=True, encipher_only=False,
                                                decipher_only=False), critical=True)
                   .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
                   .sign(key, hashes.SHA256()))
    return _pem(certificate, key)


def make_server_certificate(ca: Pem, hosts: list[str]) -> Pem:
    """A server certificate signed by ``ca`` for ``hosts`` (names and IP addresses alike)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID

    if not hosts:
        raise ValueError("a server certificate needs at least one host name or address")
    ca_key = serialization.load_pem_private_key(ca.key, password=None)
    ca_certificate = x509.load_pem_x509_certificate(ca.certificate)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    names: list[x509.GeneralName] = []
    for host in dict.fromkeys(hosts):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    certificate = (x509.CertificateBuilder().subject_name(_name(hosts[0]))  # type: ignore[arg-type]
                   .issuer_name(ca_certificate.subject).public_key(key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=SERVER_DAYS))
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.SubjectAlternativeName(names), critical=False)
                   .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
                   .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                       ca_certificate.public_key()), critical=False)  # type: ignore[arg-type]
                   .sign(ca_key, hashes.SHA256()))  # type: ignore[arg-type]
    return _pem(certificate, key)
