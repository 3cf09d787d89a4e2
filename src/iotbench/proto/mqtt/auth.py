"""User names and passwords (mosquitto's password_file), and who may connect.

The file is mosquitto's: one `username:password` per line; a line starting
with "#" is a comment; blanks around the name and the password are
ignored. The password is one of

- `$7$ITERATIONS$SALT$HASH`, what mosquitto 2.0's mosquitto_passwd writes:
  PBKDF2-HMAC-SHA512 of the password over ITERATIONS rounds (101 by
  default), with SALT (12 bytes) and HASH (64 bytes) in base64;
- `$6$SALT$HASH`, mosquitto 1.x's: SHA-512 of the password followed by
  the salt;
- anything else not starting with `$DIGITS$`: the password itself, in
  plain text. mosquitto 2.0 drops such entries (`mosquitto_passwd -U FILE`
  hashes a file in place); we read them, for tests and simulations where a
  hash would only hide the password from its author. The password
  is everything after the first ":", so it may hold ":" itself.

Stricter than mosquitto, which skips a line without ":" silently and an
entry without a password or with a bad hash with a warning, and starts
anyway: here a line without ":", an empty name or password, a name given
twice, a malformed or unknown hash all raise ConfigFileError, so that a
typo never silently locks a user out.

Hashes are checked with hashlib, compared with hmac.compare_digest.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass

from .codec import ConnectReturnCode
from .conffile import BLANKS, ConfigFileError, numbered_lines

__all__ = ["Passwords", "refusal"]

#: The longest user name a CONNECT can carry (a 16-bit length, 1.5.3).
MAX_NAME_BYTES = 65535
#: mosquitto's salt and SHA-512 hash lengths; it drops entries with others.
SALT_BYTES = 12
HASH_BYTES = 64
#: A C int holds mosquitto's iteration count.
MAX_ITERATIONS = 2**31 - 1

_HASH_PREFIX = re.compile(r"\$([0-9]+)\$")


@dataclass(frozen=True, slots=True)
class _Hashed:
    """A hashed password: $6$ (iterations None, one SHA-512) or $7$ (PBKDF2)."""

    iterations: int | None
    salt: bytes
    digest: bytes

    def verify(self, password: bytes) -> bool:
        if self.iterations is None:
            computed = hashlib.sha512(password + self.salt).digest()
        else:
            computed = hashlib.pbkdf2_hmac("sha512", password, self.salt, self.iterations)
        return hmac.compare_digest(computed, self.digest)


class Passwords:
    """User name -> password, plain (bytes) or hashed; `check()` a CONNECT's pair."""

    __slots__ = ("_entries",)

    def __init__(self, entries: Mapping[str, bytes | _Hashed]) -> None:
        self._entries = dict(entries)

    @classmethod
    def parse(cls, data: str | bytes, source: str = "password file") -> Passwords:
        """A password file's text; ConfigFileError naming `source` and the line if bad."""
        entries: dict[str, bytes | _Hashed] = {}
        first_line: dict[str, int] = {}
        for number, line in numbered_lines(data, source):
            name, colon, secret = line.partition(":")
            name, secret = name.strip(BLANKS), secret.strip(BLANKS)
            if not colon:
                raise ConfigFileError(source, number, "no ':' between user name and password")
            if not name:
                raise ConfigFileError(source, number, "empty user name")
            if len(name.encode()) > MAX_NAME_BYTES:
                raise ConfigFileError(source, number, f"user name over {MAX_NAME_BYTES} bytes")
            if name in entries:
                again = f"user {name!r} again (first on line {first_line[name]})"
                raise ConfigFileError(source, number, again)
            if not secret:
                raise ConfigFileError(source, number, f"no password for {name!r}")
            entries[name] = _secret(secret, source, number)
            first_line[name] = number
        return cls(entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, username: object) -> bool:
        return username in self._entries

    def check(self, username: str, password: bytes | None) -> bool:
        """Whether `username` is known and `password` is its password (None never is)."""
        secret = self._entries.get(username)
        if secret is None or password is None:
            return False
        if isinstance(secret, _Hashed):
            return secret.verify(password)
        return hmac.compare_digest(secret, password)


def _secret(text: str, source: str, number: int) -> bytes | _Hashed:
    """A password field: a hash when it starts with $DIGITS$, plain text otherwise."""
    prefix = _HASH_PREFIX.match(text)
    if prefix is None:
        return text.encode()
    kind, fields = prefix.group(1), text[prefix.end() :].split("$")
    if kind == "7" and len(fields) == 3:
        iterations = fields.pop(0)
        if not iterations.isascii() or not iterations.isdigit():
            raise ConfigFileError(source, number, f"$7$ iterations {iterations!r} is not a number")
        if not 1 <= int(iterations) <= MAX_ITERATIONS:
            raise ConfigFileError(source, number, f"$7$ iterations {iterations} out of range")
        rounds: int | None = int(iterations)
    elif kind == "6" and len(fields) == 2:
        rounds = None
    elif kind in ("6", "7"):
        shape = "$7$ITERATIONS$SALT$HASH" if kind == "7" else "$6$SALT$HASH"
        raise ConfigFileError(source, number, f"a ${kind}$ password hash is {shape}")
    else:
        raise ConfigFileError(
            source, number, f"unknown password hash ${kind}$ (mosquitto writes $6$ and $7$)"
        )
    salt = _base64(fields[0], SALT_BYTES, "salt", source, number)
    digest = _base64(fields[1], HASH_BYTES, "hash", source, number)
    return _Hashed(rounds, salt, digest)


def _base64(text: str, size: int, what: str, source: str, number: int) -> bytes:
    try:
        value = base64.b64decode(text, validate=True)
    except ValueError:  # binascii.Error, or a character beyond ASCII
        raise ConfigFileError(source, number, f"the {what} is not base64") from None
    if len(value) != size:
        raise ConfigFileError(source, number, f"the {what} is {len(value)} bytes, not {size}")
    return value


def refusal(
    passwords: Passwords | None,
    allow_anonymous: bool,
    username: str | None,
    password: bytes | None,
) -> int | None:
    """The CONNACK return code that refuses a CONNECT's credentials, or None to accept.

    A client without a user name is anonymous: refused with 0x05 "not
    authorized" unless anonymous clients are allowed. Credentials that are
    given are checked whenever there is a password table, even when anonymous
    clients are allowed (as mosquitto does), and refused with 0x04 "bad user
    name or password" (3.2.2.3). mosquitto 2.0 answers 0x05 to both cases.
    """
    if username is None:
        return None if allow_anonymous else ConnectReturnCode.NOT_AUTHORIZED
    if passwords is None or passwords.check(username, password):
        return None
    return ConnectReturnCode.BAD_USERNAME_OR_PASSWORD
