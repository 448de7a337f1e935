"""SSRF rules of annotator.outbound: shapes, address kinds, the allowed networks, the pinned address."""

from __future__ import annotations

import ipaddress
import socket

import pytest
from django.core.exceptions import ImproperlyConfigured

from annotator import outbound
from annotator.settings import networks


@pytest.mark.parametrize(("url", "says"), [
    ("ftp://hooks.example.org/x", "starts with https://"),
    ("file:///etc/passwd", "starts with https://"),
    ("https:///nohost", "names a host"),
    ("https://user:pw@hooks.example.org/x", "no user name or password"),
    ("https://hooks.example.org/x#frag", "no #fragment"),
    ("https://hooks.example.org:99999/x", "not a valid URL"),
    ("https://hooks.example.org/" + "a" * 2000, "at most 2000"),
])
def test_bad_urls_are_refused_with_a_reason(url, says):
    assert says in outbound.url_problem(url)


def test_a_plain_https_url_has_no_problem():
    assert outbound.url_problem("https://hooks.example.org/blindspot?x=1") is None


@pytest.mark.parametrize(("address", "kind"), [
    ("127.0.0.1", "loopback"), ("::1", "loopback"), ("::ffff:127.0.0.1", "loopback"),
    ("169.254.169.254", "cloud metadata"), ("fd00:ec2::254", "cloud metadata"), ("100.100.100.200", "cloud metadata"),
    ("169.254.10.1", "link-local"), ("fe80::1", "link-local"),
    ("10.1.2.3", "private"), ("192.168.0.9", "private"), ("172.16.0.1", "private"), ("fc00::1", "private"),
    ("224.0.0.1", "multicast"), ("ff02::1", "multicast"), ("0.0.0.0", "unspecified"),
    ("240.0.0.1", "reserved"), ("100.64.0.1", "not a public address"),
])
def test_internal_addresses_are_refused_by_default(settings, address, kind):
    settings.BLINDSPOT_WEBHOOK_ALLOWED_NETWORKS = []
    problem = outbound.refusal(ipaddress.ip_address(address))
    assert problem and kind in problem and "BLINDSPOT_WEBHOOK_ALLOWED_NETWORKS" in problem


@pytest.mark.parametrize(("address", "kind"), [
    ("2002:7f00:1::", "loopback"), ("2002:a9fe:a9fe::", "cloud metadata"), ("2002:0a01:0203::1", "private"),
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback"),  # Teredo: the client 127.0.0.1, obfuscated
    ("2001:0:4136:e378:8000:63bf:5601:5601", "cloud metadata"),  # Teredo: the client 169.254.169.254
])
def test_6to4_and_teredo_addresses_are_checked_as_the_ipv4_they_embed(settings, address, kind):
    """http://[2002:7f00:1::]/ and [2002:a9fe:a9fe::] were accepted: loopback and the metadata address."""
    settings.BLINDSPOT_WEBHOOK_ALLOWED_NETWORKS = []
    problem = outbound.refusal(ipaddress.ip_address(address))
    assert problem and kind in problem


def test_a_6to4_address_of_a_public_ipv4_passes(settings):
    settings.BLINDSPOT_WEBHOOK_ALLOWED_NETWORKS = []
    assert outbound.refusal(ipaddress.ip_address("2002:5db8:d822::")) is None


@pytest.mark.parametrize("address", ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946", "8.8.8.8"])
def test_public_addresses_pass(settings, address):
    settings.BLINDSPOT_WEBHOOK_ALLOWED_NETWORKS = []
    assert outbound.refusal(ipaddress.ip_address(address)) is None


def test_an_allowed_network_opens_only_itself(settings):
    settings.BLINDSPOT_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    assert outbound.refusal(ipaddress.ip_address("127.0.0.1")) is None
    assert outbound.refusal(ipaddress.ip_address("::ffff:127.0.0.1")) is None
    assert "loopback" in outbound.refusal(ipaddress.ip_address("127.0.0.2"))
    assert "metadata" in outbound.refusal(ipaddress.ip_address("169.254.169.254"))


def test_the_setting_refuses_a_typo_at_start():
    assert networks("X", ["10.0.0.0/8", "fd00::/8"]) == ["10.0.0.0/8", "fd00::/8"]
    with pytest.raises(ImproperlyConfigured, match="not a network"):
        networks("X", ["10.0.0.0/33"])


def _resolving_to(monkeypatch, *addresses):
    def fake(host, port, *args, **kwargs):
        return [(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port))
                for a in addresses]

    monkeypatch.setattr(outbound.socket, "getaddrinfo", fake)


def test_a_name_resolving_to_an_internal_address_is_refused(settings, monkeypatch):
    settings.BLINDSPOT_WEBHOOK_ALLOWED_NETWORKS = []
    _resolving_to(monkeypatch, "93.184.216.34", "169.254.169.254")  # one bad answer among good ones
    with pytest.raises(outbound.OutboundRefused, match="hooks.example.org resolves to 169.254.169.254: 169.254.169.254 is a cloud metadata"):
        outbound.url_check("https://hooks.example.org/x")


def test_localhost_is_refused_at_registration_without_the_setting(settings):
    settings.BLINDSPOT_WEBHOOK_ALLOWED_NETWORKS = []
    with pytest.raises(outbound.OutboundRefused, match="loopback"):
        outbound.url_check("http://localhost:8000/x")


def test_a_name_that_does_not_resolve_is_an_error_worth_retrying(monkeypatch):
    def fail(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(outbound.socket, "getaddrinfo", fail)
    with pytest.raises(outbound.OutboundError, match="could not be resolved"):
        outbound.url_check("https://nowhere.invalid/x")


def test_the_connection_goes_to_the_checked_address_with_the_urls_host(settings, monkeypatch, receiver):
    """The name is resolved once and checked; the request goes to that address (no second lookup
    that DNS rebinding could answer differently) and keeps the URL's Host."""
    settings.BLINDSPOT_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    port = receiver.url.split(":")[2].split("/")[0]
    calls = []
    real = socket.getaddrinfo

    def once(host, *args, **kwargs):
        calls.append(host)  # the name once; then only the checked address (a literal: no DNS query)
        return real("127.0.0.1", *args, **kwargs)

    monkeypatch.setattr(outbound.socket, "getaddrinfo", once)
    status = outbound.post(f"http://hooks.test:{port}/in?x=1", b"{}", {"Content-Type": "application/json"}, timeout=5)
    assert status == 200 and calls.count("hooks.test") == 1 and set(calls) <= {"hooks.test", "127.0.0.1"}
    assert receiver.got[0]["headers"]["Host"] == f"hooks.test:{port}"
    assert receiver.got[0]["path"] == "/in?x=1"


def test_a_redirect_is_an_answer_not_followed(settings, receiver):
    settings.BLINDSPOT_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    receiver.answers = [302]
    assert outbound.post(receiver.url, b"{}", {}, timeout=5) == 302
    assert len(receiver.got) == 1


def test_nothing_listening_is_an_error_worth_retrying(settings):
    settings.BLINDSPOT_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    with pytest.raises(outbound.OutboundError):
        outbound.post(f"http://127.0.0.1:{port}/", b"{}", {}, timeout=2)


@pytest.fixture
def tls_receiver(tmp_path, monkeypatch):
    """An HTTPS receiver on 127.0.0.1 whose certificate names hooks.test (trusted for this test)."""
    import datetime
    import ssl
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "hooks.test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("hooks.test")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))  # what the default context trusts
    got = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            got.append(self.headers["Host"])
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], got
    server.shutdown()
    server.server_close()


def test_https_checks_the_certificate_for_the_urls_name_at_the_checked_address(settings, monkeypatch,
                                                                               tls_receiver):
    settings.BLINDSPOT_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    port, got = tls_receiver
    real = socket.getaddrinfo
    monkeypatch.setattr(outbound.socket, "getaddrinfo", lambda host, *a, **k: real("127.0.0.1", *a, **k))
    assert outbound.post(f"https://hooks.test:{port}/x", b"{}", {}, timeout=5) == 204
    assert got == [f"hooks.test:{port}"]
    with pytest.raises(outbound.OutboundError, match="SSL|certificate|hostname"):
        outbound.post(f"https://other.test:{port}/x", b"{}", {}, timeout=5)  # the certificate names hooks.test
    assert len(got) == 1
