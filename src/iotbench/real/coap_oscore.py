"""Real mode's OSCORE: a security context from a file, and its sequence numbers
kept across runs.

    iotbench serve coap --oscore server.json
    iotbench client coap GET coap://HOST/voltage --oscore client.json

The file holds aiocoap's keys for an OSCORE context (the settings.json of
aiocoap's FilesystemSecurityContext), so one description serves both:

    {"sender-id_hex": "01", "recipient-id_hex": "02", "secret_ascii": "...",
     "salt_hex": "9e7ca92223786340", "id-context_hex": "37cb...",
     "algorithm": "AES-CCM-16-64-128", "kdf-hashfun": "sha256", "window": 32}

Byte strings take the suffix `_hex` or `_ascii`; sender-id, recipient-id and
secret are required. Anything else is refused with the file, the key and what
is allowed.

Sequence numbers (RFC 8613 7.5.1, Appendix B.1.1): a Sender Sequence Number
must never be used twice with one key, across restarts too. Next to the
context, `NAME.sequence.json` holds {"next-to-send": N}: a high-water mark
written (and synced) before any number at or above it is used, 100 numbers
at a time, and the exact next number on a clean exit; a crash wastes at most
100 numbers. The first run has no such file and starts at 0. While the file
is in use it is locked (flock), so that two processes never share one
context. The replay window is not kept: a server whose context was used
before starts with its window unknown and recovers it with Echo (B.1.2),
which costs each client one round trip after a restart.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from iotbench.proto.oscore.context import MAX_ID_LENGTH, SecurityContext
from iotbench.proto.oscore.layer import OscoreLayer
from iotbench.scenarios import UserError

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; the documentation says so
    fcntl = None  # type: ignore[assignment]  # tested for None where it is used

#: The byte-string keys of aiocoap's format: (key, required).
BYTE_KEYS = (
    ("sender-id", True),
    ("recipient-id", True),
    ("secret", True),
    ("salt", False),
    ("id-context", False),
)
#: The other keys and the only values built (RFC 8613's mandatory algorithms).
FIXED_KEYS = {"algorithm": "AES-CCM-16-64-128", "kdf-hashfun": "sha256"}
#: Sequence numbers reserved on disk at a time (Appendix B.1.1's K).
RESERVE_STEP = 100


def _allowed() -> str:
    names = [f"{k}_hex|{k}_ascii" for k, _ in BYTE_KEYS]
    return ", ".join(names + list(FIXED_KEYS) + ["window"])


def parse_context(path: Path, data: object, *, window_known: bool) -> SecurityContext:
    """The security context a parsed context file describes; UserError if it does not."""
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected a JSON object with the keys {_allowed()}")
    values: dict[str, bytes] = {}
    for key, value in data.items():
        name, _, encoding = key.rpartition("_")
        if name in dict(BYTE_KEYS) and encoding in ("hex", "ascii"):
            if name in values:
                raise UserError(f"{path}: {name} is given twice (as _hex and _ascii)")
            values[name] = _bytes(path, key, value, encoding)
        elif key in FIXED_KEYS:
            if value != FIXED_KEYS[key]:
                raise UserError(f"{path}: {key} {value!r} is not built; allowed: {FIXED_KEYS[key]}")
        elif key != "window":
            raise UserError(f"{path}: unknown key {key!r}; allowed: {_allowed()}")
    for name, required in BYTE_KEYS:
        if required and name not in values:
            raise UserError(f"{path}: {name}_hex or {name}_ascii is required")
    window = data.get("window", 32)
    if type(window) is not int or window < 1:
        raise UserError(f"{path}: window {window!r} must be a positive integer (default 32)")
    for name in ("sender-id", "recipient-id"):
        if len(values[name]) > MAX_ID_LENGTH:
            raise UserError(f"{path}: {name} is {len(values[name])} bytes; at most 7 (3.3)")
    if values["sender-id"] == values["recipient-id"]:
        raise UserError(f"{path}: sender-id and recipient-id must differ")
    return SecurityContext(
        values["secret"],
        values["sender-id"],
        values["recipient-id"],
        master_salt=values.get("salt", b""),
        id_context=values.get("id-context"),
        window_size=window,
        replay_window_known=window_known,
    )


def _bytes(path: Path, key: str, value: object, encoding: str) -> bytes:
    if not isinstance(value, str):
        raise UserError(f"{path}: {key} must be a string")
    try:
        return bytes.fromhex(value) if encoding == "hex" else value.encode("ascii")
    except (ValueError, UnicodeEncodeError):
        what = "hexadecimal digits" if encoding == "hex" else "ASCII text"
        raise UserError(f"{path}: {key} must be {what}") from None


class SequenceStore:
    """The high-water mark of a context's Sender Sequence Number, on disk."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> int | None:
        """The next number to send, or None when the context was never used."""
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise UserError(f"{self.path}: cannot read the sequence state: {exc}") from None
        number = data.get("next-to-send") if isinstance(data, dict) else None
        if type(number) is not int or number < 0:
            raise UserError(f"{self.path}: next-to-send must be a non-negative integer")
        return number

    def write(self, number: int) -> None:
        """Replace the file with {"next-to-send": number}, synced before returning."""
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".sequence-", suffix=".json")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump({"next-to-send": number}, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise UserError(f"{self.path}: cannot write the sequence state: {exc}") from None


@contextlib.contextmanager
def open_context(path: Path) -> Iterator[SecurityContext]:
    """The context of `path`, locked and with its sequence numbers persisted, until exit."""
    try:
        lock = open(path, "rb")  # held open (and locked) while the context is in use
    except OSError as exc:
        raise UserError(f"{path}: cannot open the OSCORE context: {exc.strerror}") from None
    with lock:
        if fcntl is not None:
            try:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise UserError(
                    f"{path}: the context is in use (by another process, or given twice):"
                    " two users of one context would reuse its nonces"
                ) from None
        try:
            data = json.loads(lock.read())
        except ValueError as exc:
            raise UserError(f"{path}: not JSON: {exc}") from None
        store = SequenceStore(path.with_name(f"{path.stem}.sequence.json"))
        start = store.read()
        ctx = parse_context(path, data, window_known=start is None)
        ctx.sender_sequence_number = start or 0
        ctx.sequence_limit = ctx.sender_sequence_number  # reserve before the first use

        def reserve(number: int) -> int:
            store.write(number + RESERVE_STEP)
            return number + RESERVE_STEP

        ctx.reserve = reserve
        try:
            yield ctx
        finally:
            store.write(ctx.sender_sequence_number)  # the exact next number, for the next run


@contextlib.contextmanager
def open_contexts(paths: list[Path]) -> Iterator[list[SecurityContext]]:
    """`open_context` for each of `paths` (a server's clients), each a client of its own."""
    with contextlib.ExitStack() as stack:
        contexts = [stack.enter_context(open_context(path)) for path in paths]
        clients: dict[tuple[bytes | None, bytes], Path] = {}
        keys: dict[bytes, Path] = {}
        for path, ctx in zip(paths, contexts, strict=True):
            client = (ctx.id_context, ctx.recipient_id)
            if client in clients:
                raise UserError(
                    f"{clients[client]} and {path} have the same recipient-id (and"
                    " id-context): a server tells its clients' contexts apart by them"
                )
            if ctx.sender_key in keys:
                raise UserError(
                    f"{keys[ctx.sender_key]} and {path} have the same secret, salt, id-context"
                    " and sender-id: their nonces would repeat under one key (RFC 8613 3.3)"
                )
            clients[client] = keys[ctx.sender_key] = path
        yield contexts


def oscore_client(ctx: SecurityContext) -> Callable[[random.Random], OscoreLayer]:
    """The layer of a client of one server (real/coap.py's `security`)."""
    return lambda rng: OscoreLayer(rng, any_peer=ctx, require_oscore=True)


def oscore_server(*contexts: SecurityContext) -> Callable[[random.Random], OscoreLayer]:
    """The layer of a server that takes OSCORE requests of `contexts` only (4.01 for others)."""

    def make(rng: random.Random) -> OscoreLayer:
        layer = OscoreLayer(rng, require_oscore=True)
        for ctx in contexts:
            layer.add_context(ctx)
        return layer

    return make
