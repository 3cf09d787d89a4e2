"""coap:// URIs to options and back (RFC 7252 6.4 and 6.5).

Parsing follows the RFC's algorithm: the URI must be absolute, have a CoAP
scheme and no fragment; the host is lower-cased; path segments and query
arguments are percent-decoded completely, so a "%2F" in a segment becomes a
"/" inside one Uri-Path option rather than a segment separator. A path of ""
or "/" yields no Uri-Path option; a trailing slash yields an empty last
segment (RFC 7252 erratum 4895).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from typing import NamedTuple
from urllib.parse import quote, unquote_to_bytes

from .codec import DEFAULT_PORT, DEFAULT_SECURE_PORT, encode_uint
from .options import Opt

#: Default ports of the CoAP URI schemes (RFC 7252 6.1/6.2, RFC 8323 8.1-8.4).
SCHEME_PORTS = {
    "coap": DEFAULT_PORT,
    "coaps": DEFAULT_SECURE_PORT,
    "coap+tcp": DEFAULT_PORT,
    "coaps+tcp": DEFAULT_SECURE_PORT,
    "coap+ws": 80,
    "coaps+ws": 443,
}

# RFC 3986 appendix B: splits any URI reference into its five components.
_URI_RE = re.compile(r"^(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(#.*)?$", re.DOTALL)
_IPV4_RE = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}$")

# Characters that need no percent-encoding (RFC 3986 pchar minus the unreserved set
# that quote() never encodes anyway); "&" is left out of query args since it separates them.
_SEGMENT_SAFE = "!$&'()*+,;=:@"
_QUERY_SAFE = "!$'()*+,;=:@/?"


class CoapUriError(ValueError):
    """The string is not a usable CoAP URI (RFC 7252 6.4 steps 1-4)."""


class CoapUri(NamedTuple):
    """A parsed CoAP URI; unpacks as (host, port, path_segments, query_list)."""

    host: str
    port: int
    path: list[str]
    query: list[str]


def _pct_decode(s: str, what: str) -> str:
    try:
        return unquote_to_bytes(s).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CoapUriError(f"{what} {s!r} does not percent-decode to UTF-8") from exc


def _split(uri: str) -> tuple[str, str, str, str, str | None]:
    """(scheme, host, port string, path, query or None) after the RFC 7252 6.4 checks."""
    m = _URI_RE.match(uri)
    if m is None:  # never: every part of the pattern is optional
        raise CoapUriError(f"not an absolute URI with an authority: {uri!r}")
    scheme_raw, authority, path, query, fragment = m.groups()
    if not scheme_raw or authority is None:
        raise CoapUriError(f"not an absolute URI with an authority: {uri!r}")
    scheme = scheme_raw.lower()
    if scheme not in SCHEME_PORTS:
        raise CoapUriError(f"scheme {scheme_raw!r} is not a CoAP scheme")
    if fragment is not None:
        raise CoapUriError(f"CoAP URIs must not have a fragment: {uri!r}")
    if "@" in authority:
        raise CoapUriError(f"CoAP URIs have no userinfo: {uri!r}")
    if authority.startswith("["):
        end = authority.find("]")
        if end < 0:
            raise CoapUriError(f"unterminated IPv6 literal in {uri!r}")
        host, rest = authority[: end + 1], authority[end + 1 :]
        if rest and not rest.startswith(":"):
            raise CoapUriError(f"junk after IPv6 literal in {uri!r}")
        port = rest[1:]
    else:
        host, _, port = authority.partition(":")
    if not host:
        raise CoapUriError(f"CoAP URIs need a host: {uri!r}")
    return scheme, host, port, path, query


def _host_value(host: str) -> tuple[str, bool]:
    """(host without brackets, lower-cased and percent-decoded; whether it is an IP literal)."""
    if host.startswith("["):
        literal = host[1:-1]
        addr, pct, zone = literal.partition("%")
        try:
            ipaddress.IPv6Address(addr)
        except ValueError as exc:
            raise CoapUriError(f"bad IPv6 literal {host!r}") from exc
        # RFC 6874 zone identifiers are written "%25zone" inside the brackets.
        zone = _pct_decode(pct + zone, "zone")[1:] if pct else ""
        return (addr.lower() + ("%" + zone if zone else "")), True
    if _IPV4_RE.match(host):
        try:
            ipaddress.IPv4Address(host)
        except ValueError as exc:
            raise CoapUriError(f"bad IPv4 address {host!r}") from exc
        return host, True
    return _pct_decode(host.lower(), "host"), False


def _parse(uri: str) -> tuple[str, str, bool, int, list[str], list[str]]:
    scheme, host_raw, port_s, path, query = _split(uri)
    host, is_ip = _host_value(host_raw)
    if port_s == "":
        port = SCHEME_PORTS[scheme]
    elif port_s.isascii() and port_s.isdigit() and int(port_s) <= 0xFFFF:
        port = int(port_s)
    else:
        raise CoapUriError(f"bad port {port_s!r} in {uri!r}")
    segments = (
        [] if path in ("", "/") else [_pct_decode(s, "path segment") for s in path[1:].split("/")]
    )
    args = [] if query is None else [_pct_decode(a, "query argument") for a in query.split("&")]
    return scheme, host, is_ip, port, segments, args


def parse_coap_uri(uri: str) -> CoapUri:
    """Split a CoAP URI into host, port, decoded path segments and query arguments.

    "coap://[::1]:5700/a/b%20c?x=1&y" -> ("::1", 5700, ["a", "b c"], ["x=1", "y"]).
    The port defaults to the scheme's (5683 for coap). "?" with nothing after it
    is one empty query argument, as RFC 7252 6.4 step 9 prescribes.
    Raises CoapUriError (a ValueError) for anything that is not a CoAP URI.
    """
    _, host, _, port, segments, args = _parse(uri)
    return CoapUri(host, port, segments, args)


def uri_scheme(uri: str) -> str:
    """The lower-cased scheme of a CoAP URI ("coap", "coaps", ...)."""
    return _split(uri)[0]


def options_from_uri(
    uri: str, destination_port: int | None = None, *, with_host: bool = True
) -> list[tuple[int, bytes]]:
    """The Uri-Host/Uri-Port/Uri-Path/Uri-Query options for a request to `uri` (RFC 7252 6.4).

    Uri-Host is included when the host is a name rather than an IP literal
    (`with_host=False` omits it, saving bytes when the server does not host
    several names). Uri-Port is included only when `destination_port` is given
    and differs from the URI's port, since by default the datagram goes to the
    URI's port.
    """
    _, host, is_ip, port, segments, args = _parse(uri)
    opts: list[tuple[int, bytes]] = []
    if with_host and not is_ip:
        opts.append((Opt.URI_HOST, host.encode("utf-8")))
    if destination_port is not None and destination_port != port:
        opts.append((Opt.URI_PORT, encode_uint(port)))
    opts.extend((Opt.URI_PATH, s.encode("utf-8")) for s in segments)
    opts.extend((Opt.URI_QUERY, a.encode("utf-8")) for a in args)
    return opts


def compose_coap_uri(
    host: str,
    port: int,
    path: Sequence[str] = (),
    query: Sequence[str] = (),
    scheme: str = "coap",
) -> str:
    """Build a URI from decoded parts (RFC 7252 6.5), percent-encoding as needed.

    Inverse of parse_coap_uri for hosts given as names, IPv4 or IPv6 addresses.
    """
    if ":" in host:
        addr, pct, zone = host.partition("%")
        authority = f"[{addr}{'%25' + quote(zone, safe='') if pct else ''}]"
    else:
        authority = quote(host, safe="!$&'()*+,;=")
    if port != SCHEME_PORTS.get(scheme):
        authority += f":{port}"
    uri = f"{scheme}://{authority}"
    if path:
        uri += "".join("/" + quote(s, safe=_SEGMENT_SAFE) for s in path)
    if query:
        uri += "?" + "&".join(quote(a, safe=_QUERY_SAFE) for a in query)
    return uri
