"""The TCP settings of a run (`protocol.tcp`), shared by every protocol over TCP."""

from __future__ import annotations

from iotbench.net.tcp import TcpParams

# protocol.tcp keys that are not TcpParams fields but decide what the world does.
WORLD_TCP_KEYS = ("prime_fast_open",)


def tcp_params(cfg: dict) -> TcpParams:
    return TcpParams(**{k: v for k, v in cfg.items() if k not in WORLD_TCP_KEYS})
