"""Refuse to fetch from private, loopback, link-local, multicast and other non-public addresses.

A crawler follows links that anyone can write, so a page could point it at ``http://169.254.169.254/``
(cloud metadata), ``http://10.0.0.5/admin`` or ``http://localhost:8080/``. Every host is resolved and
all its addresses checked before the first request to it, and again when each connection is opened
(the connection goes to the address that was checked, so a DNS answer that changes between check and
connect cannot slip a private address in). Addresses listed in ``crawl.allow_private_addresses``
(single addresses or networks, each with an optional port: ``127.0.0.1:8765`` allows that port only)
are allowed; the embedded pair configs and the tests list 127.0.0.1 for the local site.

Name resolution runs inside the request's timeout (it is part of opening the connection), and every
checked address is tried in turn until one accepts the connection.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

from bitextflow.config import allowed_address

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class AddressRefused(Exception):
    """A host resolves to an address the crawl may not contact."""

    def __init__(self, host: str, address: str, reason: str):
        super().__init__(f"{host} resolves to {address} ({reason}); allow it with crawl.allow_private_addresses")
        self.host = host
        self.address = address
        self.reason = reason


def _why_refused(address: IPAddress) -> str | None:
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        elif address.sixtofour is not None:
            # 6to4 (2002::/16, deprecated by RFC 7526) tunnels to the IPv4 address inside it: 2002:7f00:1:: is 127.0.0.1
            return "6to4"
        elif address.is_site_local:  # fec0::/10, deprecated, but routed inside some networks
            return "site-local"
    for reason in ("loopback", "link_local", "multicast", "private", "unspecified", "reserved"):
        if getattr(address, f"is_{reason}"):
            return reason.replace("_", "-")
    if not address.is_global:
        return "non-global"
    return None


class AddressGuard:
    """Decides whether an address may be contacted, and resolves hosts to checked addresses."""

    def __init__(self, allowed: Iterable[str] = (), resolve_timeout: float | None = None):
        self.allowed = [allowed_address(item) for item in allowed]
        self.resolve_timeout = resolve_timeout
        self._host_verdicts: dict[str, AddressRefused | None] = {}

    def refusal(self, address: str, port: int | None = None) -> str | None:
        """Why ``address`` (on ``port``) is refused, or None if it may be contacted."""
        ip = ipaddress.ip_address(address.split("%", 1)[0])
        for network, allowed_port in self.allowed:
            if network.version == ip.version and ip in network and allowed_port in (None, port):
                return None
        reason = _why_refused(ip)
        if reason and any(ip in network for network, _port in self.allowed if network.version == ip.version):
            return f"{reason}, port {port} not allowed"
        return reason

    async def resolve(self, host: str, port: int) -> list[str]:
        """Every address of ``host``; raises :class:`AddressRefused` if any of them is refused.

        All must pass, not just one: a host with one public and one private address could otherwise be
        reached on the private one.
        """
        try:
            addresses = [str(ipaddress.ip_address(host.strip("[]")))]
        except ValueError:
            loop = asyncio.get_running_loop()
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        for address in addresses:
            reason = self.refusal(address, port)
            if reason:
                raise AddressRefused(host, address, reason)
        return addresses

    async def check_host(self, host: str, port: int) -> AddressRefused | None:
        """The refusal of a host (cached per host for the crawl), or None when it may be fetched.

        Resolution failures and timeouts are not refusals: the request then fails with a connect error
        (or timeout), and the next URL of the host asks again.
        """
        key = f"{host}:{port}"
        if key not in self._host_verdicts:
            try:
                async with asyncio.timeout(self.resolve_timeout):
                    await self.resolve(host, port)
                self._host_verdicts[key] = None
            except AddressRefused as refused:
                self._host_verdicts[key] = refused
            except (OSError, TimeoutError):
                return None
        return self._host_verdicts[key]


class _GuardedBackend(httpcore.AsyncNetworkBackend):
    """Resolves, checks, then connects to the checked address (TLS still uses the host name)."""

    def __init__(self, inner: httpcore.AsyncNetworkBackend, guard: AddressGuard):
        self._inner = inner
        self._guard = guard

    async def connect_tcp(
        self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:  # fmt: skip
        try:
            async with asyncio.timeout(timeout):
                addresses = await self._guard.resolve(host, port)
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"resolving {host} took longer than {timeout} s") from None
        except OSError as exc:
            raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from exc
        failures = []
        for address in addresses:
            try:
                return await self._inner.connect_tcp(address, port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failures.append(f"{address}: {exc or type(exc).__name__}")
        raise httpcore.ConnectError(f"cannot connect to {host}:{port} ({'; '.join(failures)})")

    async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are not crawled")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def guarded_transport(guard: AddressGuard, limits: httpx.Limits) -> httpx.AsyncHTTPTransport:
    """An httpx transport whose every connection passes through ``guard`` (no proxies from the environment)."""
    transport = httpx.AsyncHTTPTransport(limits=limits, trust_env=False, retries=0)
    pool = transport._pool  # httpx 0.28 builds an httpcore pool; its backend is where connections start
    if not hasattr(pool, "_network_backend"):
        raise RuntimeError("httpx/httpcore changed: cannot install the private-address guard; pin httpx==0.28.1")
    pool._network_backend = _GuardedBackend(pool._network_backend, guard)
    return transport
