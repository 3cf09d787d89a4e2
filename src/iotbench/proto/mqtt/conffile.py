"""What the broker's two configuration files share: their one error, and their lines.

The password file (auth.py) and the ACL file (acl.py) are mosquitto's
formats, read line by line as mosquitto reads them: a line is cut at "\\n"
only, a comment is a line whose first character is "#", and blanks are C's
isspace() characters. Both parsers raise ConfigFileError, and nothing else,
for any text or bytes: a bad file stops the broker before it serves
anyone, with the file, the line and what is wrong.
"""

from __future__ import annotations

from collections.abc import Iterator

__all__ = ["BLANKS", "ConfigFileError", "numbered_lines"]

#: isspace() in the C locale: what mosquitto trims from lines, names and topics.
BLANKS = " \t\n\v\f\r"


class ConfigFileError(ValueError):
    """A password or ACL file the broker cannot use: `source`, `line` (1-based), `problem`."""

    def __init__(self, source: str, line: int, problem: str) -> None:
        super().__init__(f"{source}, line {line}: {problem}")
        self.source = source
        self.line = line
        self.problem = problem


def numbered_lines(data: str | bytes, source: str) -> Iterator[tuple[int, str]]:
    """(number, line without trailing blanks) of each line that is neither blank nor a
    comment. The text must be UTF-8 without U+0000: MQTT strings are (1.5.3), so a
    name or topic with anything else could never match what a client sends."""
    text = _text(data, source)
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip(BLANKS)
        if not line or line.startswith("#"):
            continue
        if "\x00" in line:
            raise ConfigFileError(source, number, "a NUL character (U+0000)")
        yield number, line


def _text(data: str | bytes, source: str) -> str:
    try:
        if isinstance(data, bytes):
            return data.decode("utf-8")
        data.encode("utf-8")  # a str may hold lone surrogates, which no UTF-8 text has
        return data
    except (UnicodeDecodeError, UnicodeEncodeError) as exc:
        if isinstance(data, bytes):
            line = data.count(b"\n", 0, exc.start) + 1
        else:
            line = data.count("\n", 0, exc.start) + 1
        raise ConfigFileError(source, line, "not UTF-8 text") from None
