"""Member replies into one answer: eo (lst, avg, min, max), text/plain or SenML.

A member's reply is a value when it is a 2.xx response: a reading in
text/plain (a number, optionally followed by its unit: "21.5", "49.5 V"),
or a SenML pack whose records carry "v" (with "u") or "vs". lst keeps every
value as it came; avg, min and max take the numbers, which must share one
unit (the answer carries it). A member that answered with an error code,
did not answer before the give-up, or sent a value avg, min and max cannot
use, is a failure with a reason. A nested entity's reply (lines of "<uri>
<value>", or a SenML pack) counts with each of its values.

text/plain (Content-Format 0), one line each:

    lst:  <member uri> <value>            avg/min/max:  <value>
    failures after the values:  <member uri> error: <reason>

SenML+JSON (RFC 8428, Content-Format 110): lst gives one record per value,
{"n": <member uri>, "v": <number>, "u": <unit>} ("vs" for text); avg, min
and max one record {"n": "avg", "v": <number>, "u": <unit>}. A failure is
a record {"n": <member uri>, "vs": "<reason>", "err": true}: "err" is an
extension field (RFC 8428 4.4: fields a reader does not know are ignored,
since its name does not end in "_"), so a reader that knows nothing of the
EM still reads the values and sees the reason as a string.

The response code: 2.05 when at least one value came back; otherwise 5.04
Gateway Timeout when the members did not answer in time, 5.02 Bad Gateway
when they answered with errors or unusable payloads.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from iotbench.proto.coap.codec import Code, code_name

CT_TEXT = 0
CT_SENML_JSON = 110
REPLY_FORMATS = (CT_TEXT, CT_SENML_JSON)
_READING = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([^\s\d.+-]\S*)?\s*$")


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one member gave: values (name, value as text) or a failure reason."""

    member: str
    values: tuple[tuple[str, str], ...] = ()
    error: str | None = None
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None


def reading(text: str) -> tuple[float, str | None] | None:
    """(number, unit) of a reading such as "21.5" or "49.5 V"; None if it is not one."""
    m = _READING.match(text)
    if m is None:
        return None
    number = float(m.group(1))
    return (number, m.group(2)) if math.isfinite(number) else None


def member_reply(member: str, code: int, payload: bytes, content_format: int | None) -> Outcome:
    """Read a member's response into values, or a failure."""
    if not 64 <= code < 96:  # 2.xx
        reason = code_name(code)
        detail = payload[:80].decode("utf-8", "replace").strip()
        return Outcome(member, error=f"{reason}: {detail}" if detail else reason)
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError:
        return Outcome(member, error="the payload is not UTF-8 text")
    if content_format == CT_SENML_JSON:
        return _senml_values(member, text)
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) > 1 or (lines and _is_uri(lines[0]) and " " in lines[0].strip()):
        return _nested_lines(member, lines)
    return Outcome(member, values=((member, text.strip()),))


def timed_out(member: str) -> Outcome:
    return Outcome(member, error="no response", timed_out=True)


def failed(member: str, reason: str) -> Outcome:
    return Outcome(member, error=reason)


@dataclass(frozen=True, slots=True)
class Answer:
    code: int
    payload: bytes
    content_format: int


def combine(eo: str, outcomes: Sequence[Outcome], content_format: int) -> Answer:
    """The EM's answer to its client: `eo` over the values, then the failures."""
    values = [(n, v) for o in outcomes if o.ok for n, v in o.values]
    failures = [o for o in outcomes if not o.ok]
    if eo != "lst":
        values, failures = _reduce(eo, outcomes, failures)
    if values:
        code = Code.CONTENT
    elif failures and all(f.timed_out for f in failures):
        code = Code.GATEWAY_TIMEOUT
    else:
        code = Code.BAD_GATEWAY
    render = _senml if content_format == CT_SENML_JSON else _text
    return Answer(code, render(values, failures), content_format)


def _reduce(
    eo: str, outcomes: Sequence[Outcome], failures: list[Outcome]
) -> tuple[list[tuple[str, str]], list[Outcome]]:
    """avg, min or max over the members' numbers: ([(eo, value)] or [], failures)."""
    numbers: list[float] = []
    units: set[str | None] = set()
    for o in outcomes:
        if not o.ok:
            continue
        readings = [r for _, v in o.values if (r := reading(v)) is not None]
        if len(readings) != len(o.values):
            failures = [*failures, failed(o.member, f"not a number, so no {eo}")]
            continue
        numbers.extend(r[0] for r in readings)
        units.update(r[1] for r in readings)
    if not numbers:
        return [], failures
    if len(units) > 1:
        shown = ", ".join(sorted(u or "none" for u in units))
        return [], [*failures, failed("(all)", f"the members use different units ({shown})")]
    if eo == "avg":
        result = math.fsum(numbers) / len(numbers)
    else:
        result = min(numbers) if eo == "min" else max(numbers)
    unit = units.pop()
    return [(eo, _format(result) + (f" {unit}" if unit else ""))], failures


def _format(value: float) -> str:
    return repr(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)


def _text(values: list[tuple[str, str]], failures: list[Outcome]) -> bytes:
    lines = [v if n in ("avg", "min", "max") else f"{n} {v}" for n, v in values]
    lines.extend(f"{f.member} error: {f.error}" for f in failures)
    return ("\n".join(lines) + "\n").encode("utf-8") if lines else b""


def _senml(values: list[tuple[str, str]], failures: list[Outcome]) -> bytes:
    records: list[dict[str, object]] = []
    for name, value in values:
        r = reading(value)
        if r is None:
            records.append({"n": name, "vs": value})
        else:
            records.append({"n": name, "v": r[0], **({"u": r[1]} if r[1] else {})})
    records.extend({"n": f.member, "vs": f.error, "err": True} for f in failures)
    return json.dumps(records, separators=(",", ":")).encode("utf-8")


def _is_uri(line: str) -> bool:
    return line.split(" ", 1)[0].startswith("coap://")


def _nested_lines(member: str, lines: list[str]) -> Outcome:
    """A nested entity's text/plain lst answer: "<uri> <value>" and error lines."""
    values = []
    for line in lines:
        name, _, rest = line.strip().partition(" ")
        if rest.startswith("error: "):
            continue  # the nested entity's own failures stay in its answer
        values.append((member, name) if not rest else (name, rest.strip()))
    if not values:
        return Outcome(member, error="the nested entity gave no value")
    return Outcome(member, values=tuple(values))


def _senml_values(member: str, text: str) -> Outcome:
    try:
        pack = json.loads(text)
    except ValueError:
        return Outcome(member, error="the SenML payload is not JSON")
    if not isinstance(pack, list):
        return Outcome(member, error="the SenML payload is not a pack (a JSON array)")
    values = []
    base = ""
    for record in pack:
        if not isinstance(record, dict):
            return Outcome(member, error="a SenML record is not a JSON object")
        if isinstance(record.get("bn"), str):
            base = record["bn"]
        if record.get("err") is True:
            continue
        name = base + record["n"] if isinstance(record.get("n"), str) else (base or member)
        v = record.get("v")
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            unit = record.get("u")
            values.append(
                (name, _format(float(v)) + (f" {unit}" if isinstance(unit, str) and unit else ""))
            )
        elif isinstance(record.get("vs"), str):
            values.append((name, record["vs"]))
    if not values:
        return Outcome(member, error="the SenML pack holds no value")
    if len(values) == 1:
        values = [(member, values[0][1])]
    return Outcome(member, values=tuple(values))
