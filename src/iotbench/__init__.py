"""iotbench: IoT application protocols under modelled network conditions, in virtual time."""

__version__ = "0.1.0"
