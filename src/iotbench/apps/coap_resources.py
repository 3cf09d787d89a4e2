"""Sensor readings and objects served as CoAP resources.

One helper for the simulated server (world/protocols/__init__.py) and the real one
(real/coap.py), so both answer with the same bytes and options.
"""

from __future__ import annotations

import random

from iotbench.apps.sensors import sensor_set
from iotbench.proto.coap.codec import Code
from iotbench.proto.coap.endpoint import CoapEndpoint, ResourceResponse


def serve_reading(
    endpoint: CoapEndpoint,
    path: str,
    sensor,
    *,
    observable: bool = False,
    resource_type: str | None = None,
) -> None:
    """Serve `sensor.read()` at `path` to GET (and to Observe when `observable`)."""

    def handler(request, addr) -> ResourceResponse:
        return ResourceResponse(Code.CONTENT, sensor.read(), sensor.content_format)

    endpoint.add_resource(
        path,
        handler,
        methods={Code.GET},
        observable=observable,
        content_format=sensor.content_format,
        attributes={"rt": resource_type} if resource_type else None,
    )


def serve_store(endpoint: CoapEndpoint, path: str, initial: bytes = b"") -> None:
    """A resource a client can PUT any payload to and GET back (2.04 / 2.05)."""
    payload, content_format = initial, 0

    def handler(request, addr) -> ResourceResponse:
        nonlocal payload, content_format
        if request.code == Code.PUT:
            payload = request.payload
            cf = request.content_format
            content_format = 0 if cf is None else cf
            return ResourceResponse(Code.CHANGED)
        return ResourceResponse(Code.CONTENT, payload, content_format)

    endpoint.add_resource(path, handler, methods={Code.GET, Code.PUT})


#: The resources `iotbench serve coap` offers: path -> what it holds.
REAL_RESOURCES = {
    "/voltage": "ADC voltage readout as text, e.g. `49.5 V` (observable)",
    "/json": 'JSON reading, e.g. {"id":"0x12a77af232","val":3000}',
    "/o": "an object of --object-size bytes",
    "/store": "PUT any payload, GET it back",
}


def serve_sensor_set(endpoint: CoapEndpoint, rng: random.Random, object_size_bytes: int) -> None:
    """Every resource of REAL_RESOURCES on one endpoint."""
    sensors = sensor_set(rng, object_size_bytes)
    serve_reading(
        endpoint, "/voltage", sensors["/voltage"], observable=True, resource_type="voltage"
    )
    serve_reading(endpoint, "/json", sensors["/json"], resource_type="reading")
    serve_reading(endpoint, "/o", sensors["/o"])
    serve_store(endpoint, "/store")
