"""Sensor readings and objects that servers expose as resources.

Readings come from the sensor's own random stream, so they are reproducible
and drawing them never disturbs any other component.
"""

from __future__ import annotations

import json
import random

RESOURCE_KINDS = ("voltage", "json", "object")


class VoltageSensor:
    """An analog-digital converter read out as ASCII, e.g. `49.5 V` (study S2)."""

    content_format = 0  # text/plain; charset=utf-8

    def __init__(self, rng: random.Random, low_v: float = 0.0, high_v: float = 100.0) -> None:
        self.rng = rng
        self.low_v = low_v
        self.high_v = high_v

    def read(self) -> bytes:
        return f"{self.rng.uniform(self.low_v, self.high_v):.1f} V".encode()


class JsonSensor:
    """A small JSON reading with a unique id, e.g. {"id":"0x12a77af232","val":3000} (S4)."""

    content_format = 50  # application/json

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def read(self) -> bytes:
        reading = {"id": f"0x{self.rng.getrandbits(40):010x}", "val": self.rng.randrange(10000)}
        return json.dumps(reading, separators=(",", ":")).encode()


class ObjectResource:
    """A fixed object of `size` bytes (S1's downloads): printable, deterministic."""

    content_format = 42  # application/octet-stream

    def __init__(self, size: int) -> None:
        pattern = b"0123456789abcdefghijklmnopqrstuvwxyz"
        self.body = (pattern * (size // len(pattern) + 1))[:size]

    def read(self) -> bytes:
        return self.body


def make_resource(kind: str, rng: random.Random, object_size_bytes: int = 0):
    if kind == "voltage":
        return VoltageSensor(rng)
    if kind == "json":
        return JsonSensor(rng)
    if kind == "object":
        return ObjectResource(object_size_bytes)
    raise ValueError(f"resource kind {kind!r} is not one of {', '.join(RESOURCE_KINDS)}")


def sensor_set(rng: random.Random, object_size_bytes: int) -> dict[str, object]:
    """The readings a real-mode server offers, by path (CoAP and HTTP alike)."""
    return {
        "/voltage": VoltageSensor(rng),
        "/json": JsonSensor(rng),
        "/o": ObjectResource(object_size_bytes),
    }
