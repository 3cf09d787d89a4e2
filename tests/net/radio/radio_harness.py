"""A few radios with CSMA MACs on one medium, placed by hand, for the radio tests."""

from __future__ import annotations

from iotbench.metrics.observers import Observers, PacketRecorder
from iotbench.net import ieee802154 as mac
from iotbench.net.mac.csma import CsmaMac, MacParams
from iotbench.net.radio.medium import Radio, RadioMedium
from iotbench.net.radio.neighbours import connect
from iotbench.net.radio.propagation import PathLoss
from iotbench.sim import Simulator

# No shadowing, so powers follow from distances alone: with exponent 3 and the
# free-space reference, 10 m costs about 70 dB, 100 m about 100 dB.
PATH_LOSS = PathLoss(exponent=3.0, shadowing_db=0.0)


class RadioNet:
    def __init__(
        self,
        positions: list[tuple[float, float, float]],
        *,
        seed: int = 1,
        params: MacParams | None = None,
        tx_power_dbm: float = 0.0,
        sensitivity_dbm: float = -101.0,
        cca_threshold_dbm: float = -91.0,
        link_prr: dict | None = None,
        path_loss: PathLoss = PATH_LOSS,
        mac_class=CsmaMac,
    ) -> None:
        self.sim = Simulator(seed)
        self.recorder = PacketRecorder()
        self.observers = Observers(self.recorder)
        self.medium = RadioMedium(self.sim, 26, self.sim.rng("medium"), self.observers)
        self.radios = []
        self.macs = []
        self.received: list[tuple[float, str, bytes, bytes]] = []  # (time, node, src, payload)
        self.sent: list[tuple[float, str, bytes, bool, int]] = []
        for i, _ in enumerate(positions):
            name = f"n{i}"
            radio = Radio(
                self.medium,
                i,
                name,
                tx_power_dbm=tx_power_dbm,
                sensitivity_dbm=sensitivity_dbm,
                cca_threshold_dbm=cca_threshold_dbm,
            )
            self.medium.add_radio(radio)
            self.radios.append(radio)
        connect(
            self.radios,
            positions,
            path_loss,
            self.medium.frequency_mhz,
            self.sim.rng("shadowing"),
            link_prr=link_prr,
        )
        for i, radio in enumerate(self.radios):
            m = mac_class(
                self.sim,
                radio,
                mac.extended_address(i + 1),
                self.sim.rng(f"mac/{i}"),
                params or MacParams(),
                self.observers,
            )
            m.on_receive = self._receiver(radio.name)
            m.on_sent = self._sender(radio.name)
            self.macs.append(m)

    def _receiver(self, name):
        return lambda payload, src, dst, pkt: self.received.append(
            (self.sim.now, name, src, payload)
        )

    def _sender(self, name):
        return lambda dst, status, n: self.sent.append((self.sim.now, name, dst, status, n))

    def address(self, i: int) -> bytes:
        return self.macs[i].address

    def send_at(self, t: float, src: int, dst: int | None, payload: bytes = b"x" * 50) -> None:
        to = mac.BROADCAST if dst is None else self.address(dst)
        self.sim.at(t, self.macs[src].send, to, payload)

    def frames(self, src: int | None = None) -> list:
        return [p for p in self.recorder.packets if src is None or p.src == f"n{src}"]
