"""Outbound HTTP for webhooks, guarded against server-side request forgery.

A target URL is ``http`` or ``https`` with a host name and no credentials. Its host is
resolved and every address checked: private, loopback, link-local, multicast, reserved,
unspecified, shared (carrier-grade NAT), every block of IANA's special-purpose registries and
other non-global addresses are refused (an IPv4-mapped IPv6 address is checked as the IPv4
address it maps), unless they are in the
networks ``CALENDAR_WEBHOOK_ALLOW_PRIVATE`` allows. The check runs when a subscription is
made and again at each delivery, and the request connects to the very address that was
checked (the name is not resolved a second time, so there is no DNS-rebinding window).
Redirects are never followed, connecting and reading are bounded by a timeout and at most
``MAX_ANSWER`` bytes of the answer are read.
"""
from __future__ import annotations

import concurrent.futures
import http.client
import ipaddress
import socket
import ssl
import threading
from urllib.parse import urlsplit

MAX_URL = 2000          # characters of a target URL
MAX_ANSWER = 4096       # bytes of a target's answer read (and ignored)
RESOLVE_SECONDS = 5.0   # how long a name may take to resolve
USER_AGENT = "calendar-service-webhooks"

_resolver = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="webhook-resolve")


class TargetRefused(ValueError):
    """A target URL that may not be used; the message says why (and never holds a secret)."""


class Target:
    """A checked target: the URL's parts and the address to connect to."""

    def __init__(self, scheme: str, host: str, port: int, path: str, address: str):
        self.scheme, self.host, self.port, self.path, self.address = scheme, host, port, path, address


def parse(url: str) -> tuple[str, str, int, str]:
    """(scheme, host, port, path with query) of a target URL, or TargetRefused."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL:
        raise TargetRefused(f"The URL must be a string of 1 to {MAX_URL} characters.")
    if any(ord(c) < 33 or ord(c) == 127 for c in url):
        raise TargetRefused("The URL may not hold spaces or control characters.")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise TargetRefused("The URL cannot be read.") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise TargetRefused("Only http and https URLs may be used.")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise TargetRefused("The URL may not hold a user name or password.")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise TargetRefused("The URL has no host.")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return scheme, host, port or (443 if scheme == "https" else 80), path


# Every block of IANA's special-purpose address registries (IPv4 and IPv6), refused whatever
# ``ipaddress`` says of it: some are marked globally reachable (anycast relays, AS112, AMT,
# NAT64 prefixes that reach any IPv4 address, documentation ranges newer than Python's tables),
# and none is a place a webhook receiver lives.
SPECIAL_PURPOSE = tuple(ipaddress.ip_network(n) for n in (
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
    "192.0.0.0/24", "192.0.2.0/24", "192.31.196.0/24", "192.52.193.0/24", "192.88.99.0/24",
    "192.168.0.0/16", "192.175.48.0/24", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24",
    "240.0.0.0/4", "255.255.255.255/32",
    "::/128", "::1/128", "::ffff:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "100:0:0:1::/64",
    "2001::/23", "2001::/32", "2001:2::/48", "2001:3::/32", "2001:4:112::/48", "2001:10::/28", "2001:20::/28",
    "2001:30::/28", "2001:db8::/32", "2002::/16", "2620:4f:8000::/48", "3fff::/20", "5f00::/16", "fc00::/7",
    "fe80::/10", "fec0::/10"))


def allowed(address: str, allow: tuple[str, ...]) -> bool:
    """Whether ``address`` may be connected to: a global address outside every special-purpose
    block, or one in ``allow``."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if "*" in allow or any(ip in ipaddress.ip_network(n, strict=False) for n in allow):
        return True
    bad = (ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_multicast or ip.is_reserved
           or ip.is_unspecified or not ip.is_global
           or any(ip.version == net.version and ip in net for net in SPECIAL_PURPOSE))
    if isinstance(ip, ipaddress.IPv6Address) and ip.sixtofour is not None:
        bad = bad or not allowed(str(ip.sixtofour), allow)
    return not bad


def check(url: str, allow: tuple[str, ...]) -> Target:
    """Resolve and check ``url`` (see the module); returns the target to connect to."""
    scheme, host, port, path = parse(url)
    try:
        infos = _resolver.submit(socket.getaddrinfo, host, port, type=socket.SOCK_STREAM).result(RESOLVE_SECONDS)
    except concurrent.futures.TimeoutError:
        raise TargetRefused(f"The host {host} did not resolve in time.") from None
    except (OSError, UnicodeError):
        raise TargetRefused(f"The host {host} does not resolve.") from None
    addresses = list(dict.fromkeys(info[4][0] for info in infos))
    if not addresses:
        raise TargetRefused(f"The host {host} does not resolve.")
    for address in addresses:
        if not allowed(address, allow):
            raise TargetRefused(f"The host {host} resolves to {address.split('%', 1)[0]}, a private, loopback, "
                                "link-local, reserved or special-purpose address, which webhooks may not call "
                                "(see CALENDAR_WEBHOOK_ALLOW_PRIVATE).")
    return Target(scheme, host, port, path, addresses[0])


class _PinnedHTTPS(http.client.HTTPSConnection):
    """HTTPS to a checked address, verifying the certificate for the URL's host name."""

    def __init__(self, target: Target, timeout: float):
        super().__init__(target.host, target.port, timeout=timeout, context=ssl.create_default_context())
        self._address = target.address

    def connect(self):
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


class _PinnedHTTP(http.client.HTTPConnection):
    def __init__(self, target: Target, timeout: float):
        super().__init__(target.host, target.port, timeout=timeout)
        self._address = target.address

    def connect(self):
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


def post(url: str, body: bytes, headers: dict, allow: tuple[str, ...], timeout: float) -> int:
    """POST ``body`` to ``url`` after checking it; returns the answer's status. Raises
    TargetRefused for a refused target, OSError (with a short reason) when it cannot be reached."""
    target = check(url, allow)
    conn_class = _PinnedHTTPS if target.scheme == "https" else _PinnedHTTP
    conn = conn_class(target, timeout)
    host_header = target.host if ":" not in target.host else f"[{target.host}]"
    default_port = 443 if target.scheme == "https" else 80
    if target.port != default_port:
        host_header += f":{target.port}"
    # the timeout bounds each socket operation; this bounds the whole exchange (a target trickling
    # its answer cannot hold the delivery thread, and with it the lease, for longer)
    watchdog = threading.Timer(timeout, _cut, (conn,))
    watchdog.daemon = True
    watchdog.start()
    try:
        conn.putrequest("POST", target.path, skip_host=True, skip_accept_encoding=True)
        for key, value in {"Host": host_header, "User-Agent": USER_AGENT, "Content-Type": "application/json",
                           "Content-Length": str(len(body)), **headers}.items():
            conn.putheader(key, value)
        conn.endheaders(body)
        response = conn.getresponse()
        response.read(MAX_ANSWER)  # bounded; redirects (3xx) are answers like any other, never followed
        return response.status
    except (http.client.HTTPException, ssl.SSLError) as exc:
        raise OSError(f"bad answer: {type(exc).__name__}") from None
    finally:
        watchdog.cancel()
        conn.close()


def _cut(conn: http.client.HTTPConnection) -> None:
    sock = conn.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
