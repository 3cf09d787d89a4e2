"""TCP in virtual time: segments on the wire, the connection state machine,
NewReno congestion control, and a simulated node's stack."""

from iotbench.net.tcp.connection import TcpConnection
from iotbench.net.tcp.events import Closed, Connected, DataReceived, FastOpenCookie, PeerClosed
from iotbench.net.tcp.params import TcpParams
from iotbench.net.tcp.stack import TcpSocket, TcpStack

__all__ = [
    "Closed",
    "Connected",
    "DataReceived",
    "FastOpenCookie",
    "PeerClosed",
    "TcpConnection",
    "TcpParams",
    "TcpSocket",
    "TcpStack",
]
