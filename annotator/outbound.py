"""HTTP to URLs a project admin chose (webhooks): refused unless public, sent to the address checked.

A URL's host is resolved once per request. Every address it resolves to must be on the public
internet, or in a network the deployment allows (``BLINDSPOT_WEBHOOK_ALLOWED_NETWORKS``): loopback,
private, link-local, shared, multicast, reserved and unspecified addresses and the cloud metadata
addresses are refused otherwise. The connection then goes to the address that was checked, not to
a second lookup, so a DNS answer that changes between the check and the connection (DNS
rebinding) cannot reach an internal address; HTTPS keeps the URL's host name for SNI and the
certificate check. Redirects are never followed (one could point anywhere) and no proxy from the
environment is used (it would make the check meaningless).
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

import urllib3
from django.conf import settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# the metadata services of cloud machines (AWS, GCP and Azure share the first; AWS's IPv6 one;
# Alibaba's): never a webhook's address unless the deployment allows it by name
METADATA = frozenset(ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200"))
MAX_URL_LENGTH = 2000


class OutboundRefused(ValueError):
    """The URL, or an address its host resolves to, is not one a webhook may be sent to (for good:
    sending again does not help). The message says why, for the admin."""


class OutboundError(Exception):
    """The request did not get an answer (DNS, connection, TLS, timeout): worth trying again."""


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a webhook's URL (its shape only, no lookup), or None."""
    if len(url) > MAX_URL_LENGTH:
        return f"A webhook URL has at most {MAX_URL_LENGTH} characters."
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError for a port that is not a number in range
    except ValueError:
        return "That is not a valid URL."
    if parts.scheme not in ("http", "https"):
        return "A webhook URL starts with https:// (or http://)."
    if not parts.hostname:
        return "A webhook URL names a host, like https://hooks.example.org/blindspot."
    if parts.username is not None or parts.password is not None:
        return "A webhook URL carries no user name or password; the signature authenticates each delivery."
    if parts.fragment:
        return "A webhook URL has no #fragment (it is never sent)."
    return None


def embedded_ipv4(address: IPAddress) -> IPAddress | None:
    """The IPv4 address an IPv6 one carries: mapped (``::ffff:127.0.0.1``), 6to4
    (``2002:7f00:1::`` reaches 127.0.0.1 through a relay) or a Teredo client; None otherwise."""
    if address.version != 6:
        return None
    return address.ipv4_mapped or address.sixtofour or (address.teredo[1] if address.teredo else None)


def refusal(address: IPAddress) -> str | None:
    """Why a webhook may not be sent to ``address``, or None (public, or in an allowed network).
    A mapped address is the IPv4 one it maps; a 6to4 or Teredo one must pass as the IPv4 address
    it embeds and as itself."""
    inner = embedded_ipv4(address)
    if address.version == 6 and address.ipv4_mapped:
        return _refusal(inner)  # ::ffff:127.0.0.1 is 127.0.0.1
    return (_refusal(inner) if inner is not None else None) or _refusal(address)


def _refusal(address: IPAddress) -> str | None:
    if any(address in ipaddress.ip_network(n, strict=False) for n in settings.BLINDSPOT_WEBHOOK_ALLOWED_NETWORKS):
        return None
    kinds = (("a cloud metadata address", address in METADATA), ("a loopback address", address.is_loopback),
             ("a link-local address", address.is_link_local), ("a multicast address", address.is_multicast),
             ("an unspecified address", address.is_unspecified), ("a reserved address", address.is_reserved),
             ("a private address", address.is_private), ("not a public address", not address.is_global))
    kind = next((k for k, hit in kinds if hit), None)
    if kind is None:
        return None
    return (f"{address} is {kind}; webhooks go to public addresses only, unless the deployment allows "
            "its network in BLINDSPOT_WEBHOOK_ALLOWED_NETWORKS.")


def checked_address(host: str, port: int) -> str:
    """The address to connect to for ``host``: every address it resolves to passes :func:`refusal`
    (a name that answers with one internal address among public ones is refused)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise OutboundError(f"{host} could not be resolved ({exc})") from None
    addresses = list(dict.fromkeys(ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos))
    for address in addresses:
        problem = refusal(address)
        if problem:
            raise OutboundRefused(f"{host} resolves to {address}: {problem}" if str(address) != host else problem)
    return str(addresses[0])


def url_check(url: str) -> None:
    """Registration's check: the URL's shape, and where its host resolves now (``OutboundRefused``,
    or ``OutboundError`` for a name that does not resolve). Each delivery checks again."""
    problem = url_problem(url)
    if problem:
        raise OutboundRefused(problem)
    parts = urlsplit(url)
    checked_address(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))


def post(url: str, body: bytes, headers: dict[str, str], *, timeout: float) -> int:
    """POST ``body`` to ``url`` at its checked address; the answer's status code (a redirect is
    an answer, not followed). ``OutboundRefused`` or ``OutboundError`` when there is none."""
    problem = url_problem(url)
    if problem:
        raise OutboundRefused(problem)
    parts = urlsplit(url)
    https = parts.scheme == "https"
    host, port = parts.hostname, parts.port or (443 if https else 80)
    address = checked_address(host, port)
    options = {"port": port, "timeout": urllib3.Timeout(connect=timeout, read=timeout), "retries": False,
               "maxsize": 1}
    if https:
        pool = urllib3.HTTPSConnectionPool(address, server_hostname=host, assert_hostname=host,
                                           cert_reqs="CERT_REQUIRED", **options)
    else:
        pool = urllib3.HTTPConnectionPool(address, **options)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    host_header = parts.netloc.rpartition("@")[2]
    try:
        with pool:
            response = pool.urlopen("POST", path, body=body, headers={**headers, "Host": host_header},
                                    redirect=False, retries=False, preload_content=False)
            response.drain_conn()
            return response.status
    except urllib3.exceptions.HTTPError as exc:
        raise OutboundError(f"{type(exc).__name__}: {exc}") from None
