"""The TCP settings of a run (`protocol.tcp`), shared by every protocol over TCP."""

from __future__ import annotations

from iotbench.net.tcp import TcpParams
from iotbench.scenarios.settings_types import ProtocolTcpSettings

# protocol.tcp keys that are not TcpParams fields but decide what the world does.
WORLD_TCP_KEYS = ("prime_fast_open",)


def tcp_params(cfg: ProtocolTcpSettings) -> TcpParams:
    return TcpParams(**cfg.as_kwargs(*WORLD_TCP_KEYS))
