"""Dataclasses whose `__init__` is written out, for the compiler's sake.

Compiled (src/iotbench/compiled.py), the `__init__` that `@dataclass`
generates stays interpreted Python, and a frozen one sets each field through
`object.__setattr__`: 7,500 instructions to build a 6LoWPAN packet's record.
Written out in the class, mypyc compiles it into direct stores, and the
dataclass keeps its own (frozen) `__setattr__`, `__eq__`, `__hash__` and
`__repr__`. The price is the field list written twice; these tests keep the
two the same, in every compiled module.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
from pathlib import Path

import pytest

from iotbench import compiled

SRC = Path(__file__).resolve().parents[1] / "src"


def _dataclasses_with_init(module: str) -> list[tuple[ast.ClassDef, ast.FunctionDef, bool]]:
    tree = ast.parse(compiled.source_file(module, SRC).read_text())
    found = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        for decorator in node.decorator_list:
            call = decorator if isinstance(decorator, ast.Call) else None
            name = ast.unparse(call.func if call else decorator)
            if name != "dataclass":
                continue
            frozen = any(
                k.arg == "frozen" and ast.unparse(k.value) == "True"
                for k in (call.keywords if call else [])
            )
            init = next(
                (s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"),
                None,
            )
            if init is not None:
                found.append((node, init, frozen))
    return found


WRITTEN = [
    (module, cls, init, frozen)
    for module in compiled.MODULES
    for cls, init, frozen in _dataclasses_with_init(module)
]


def _fields(cls: ast.ClassDef) -> list[tuple[str, str, str | None]]:
    out = []
    for s in cls.body:
        if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name):
            annotation = ast.unparse(s.annotation)
            if annotation.startswith("ClassVar"):
                continue
            out.append((s.target.id, annotation, ast.unparse(s.value) if s.value else None))
    return out


def test_the_hot_records_are_written_out():
    # The classes S4's and S6's runs build for every frame or message.
    names = {(module, cls.name) for module, cls, _, _ in WRITTEN}
    for expected in [
        ("iotbench.net.lowpan.codec", "Compressed"),
        ("iotbench.net.lowpan.codec", "DecodedHeader"),
        ("iotbench.net.rpl.codec", "Dio"),
        ("iotbench.proto.mqttsn.messages", "Publish"),
        ("iotbench.proto.mqtt.codec", "Publish"),
        ("iotbench.proto.ndn.hopp", "Nam"),
    ]:
        assert expected in names


def _check_written_init(cls: ast.ClassDef, init: ast.FunctionDef, frozen: bool) -> None:
    fields = _fields(cls)
    args = init.args
    assert not args.vararg and not args.kwarg and not args.kwonlyargs and not args.posonlyargs
    params = args.args[1:]
    defaults = [None] * (len(params) - len(args.defaults)) + [ast.unparse(d) for d in args.defaults]
    assert [(p.arg, ast.unparse(p.annotation), d) for p, d in zip(params, defaults)] == fields
    # One store per field, in order, and __post_init__ after them when there is one.
    if frozen:
        stores = [f"object.__setattr__(self, {name!r}, {name})" for name, _, _ in fields]
    else:
        stores = [f"self.{name} = {name}" for name, _, _ in fields]
    if any(isinstance(s, ast.FunctionDef) and s.name == "__post_init__" for s in cls.body):
        stores.append("self.__post_init__()")
    assert [ast.unparse(s) for s in init.body] == [ast.unparse(ast.parse(s)) for s in stores]


@pytest.mark.parametrize(
    ("module", "cls", "init", "frozen"),
    WRITTEN,
    ids=[f"{module}.{cls.name}" for module, cls, _, _ in WRITTEN],
)
def test_a_written_init_takes_and_sets_exactly_the_fields(module, cls, init, frozen):
    _check_written_init(cls, init, frozen)


GOOD = """
@dataclass(frozen=True)
class Header:
    size: int
    tag: bytes = b""

    def __init__(self, size: int, tag: bytes = b"") -> None:
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "tag", tag)
"""


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ('    tag: bytes = b""\n', '    tag: bytes = b""\n    extra: int = 0\n'),  # a new field
        ('"tag", tag)', '"tag", size)'),  # the wrong value stored
        ('tag: bytes = b"") -> None', 'tag: bytes = b"x") -> None'),  # another default
        ('        object.__setattr__(self, "tag", tag)\n', ""),  # a field never set
    ],
)
def test_the_check_finds_an_init_that_no_longer_matches(before, after):
    for source, matches in ((GOOD, True), (GOOD.replace(before, after), False)):
        assert before in GOOD
        cls = ast.parse(source).body[0]
        init = next(s for s in cls.body if isinstance(s, ast.FunctionDef))
        if matches:
            _check_written_init(cls, init, frozen=True)
        else:
            with pytest.raises(AssertionError):
                _check_written_init(cls, init, frozen=True)


@pytest.mark.parametrize(
    ("module", "cls"),
    [(module, cls) for module, cls, _, _ in WRITTEN],
    ids=[f"{module}.{cls.name}" for module, cls, _, _ in WRITTEN],
)
def test_the_dataclass_sees_the_same_fields(module, cls):
    # Compiled, every class attribute of a dataclass is one of its fields; one
    # the __init__ does not take would break dataclasses.replace.
    runtime = importlib.import_module(module).__dict__[cls.name]
    assert [f.name for f in dataclasses.fields(runtime)] == [name for name, _, _ in _fields(cls)]


def test_a_written_out_record_is_still_frozen_compared_and_replaced():
    from iotbench.net.lowpan.codec import Compressed
    from iotbench.proto.mqttsn.codec import Publish, decode, encode

    packet = Compressed(b"\x7a", 1, 0, 40, b"payload")
    with pytest.raises(dataclasses.FrozenInstanceError):
        packet.payload = b"other"  # type: ignore[misc]
    assert packet == Compressed(b"\x7a", 1, 0, 40, b"payload")
    assert hash(packet) == hash(Compressed(b"\x7a", 1, 0, 40, b"payload"))
    publish = Publish(topic_id=1, msg_id=7, data=b"21.5", qos=1)
    again = dataclasses.replace(publish, dup=True)
    assert again.dup and decode(encode(again)) == again
    assert repr(publish).startswith("Publish(topic_id=1, msg_id=7")
