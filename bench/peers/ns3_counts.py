"""What the reference ns-3 workload does, counted (for `bench/vs_ns3.py --check`).

Runs ns3_udp_echo.py (next to this file) unchanged, with ns-3 trace sinks
attached to both point-to-point devices just before Simulator.Run(), and prints
the packets each side put on the wire, received and dropped. The timing of this
run is not used: the sinks add work.

    python bench/peers/ns3_counts.py N
"""

import os

import cppyy

REFERENCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ns3_udp_echo.py")
SPLIT = "t0 = time.perf_counter()\n"  # the line just before Simulator.Run()

with open(REFERENCE) as f:
    source = f.read()
setup, split, run = source.partition(SPLIT)
if not split:
    raise SystemExit(f"{REFERENCE} no longer has the line {SPLIT.strip()!r}")
scope = {"__name__": "__main__", "__file__": REFERENCE}
exec(compile(setup, REFERENCE, "exec"), scope)  # noqa: S102 - the reference script itself
# After the reference's `from ns import ns`, which makes the ns-3 headers known.
cppyy.cppdef(
    """
    #include "ns3/callback.h"
    #include "ns3/packet.h"
    #include "ns3/simulator.h"
    namespace bench_counts {
    long tx[2], tx_bytes[2], rx[2], drop[2];
    double first_tx = -1;
    template <int dev> void Tx(ns3::Ptr<const ns3::Packet> p) {
        if (dev == 0 && first_tx < 0) first_tx = ns3::Simulator::Now().GetSeconds();
        tx[dev]++;
        tx_bytes[dev] += p->GetSize();  // as on the wire: PPP + IPv4 + UDP + payload
    }
    template <int dev> void Rx(ns3::Ptr<const ns3::Packet>) { rx[dev]++; }
    template <int dev> void Drop(ns3::Ptr<const ns3::Packet>) { drop[dev]++; }
    using Sink = ns3::Callback<void, ns3::Ptr<const ns3::Packet>>;
    Sink tx0() { return ns3::MakeCallback(&Tx<0>); }
    Sink tx1() { return ns3::MakeCallback(&Tx<1>); }
    Sink rx0() { return ns3::MakeCallback(&Rx<0>); }
    Sink rx1() { return ns3::MakeCallback(&Rx<1>); }
    Sink drop0() { return ns3::MakeCallback(&Drop<0>); }
    Sink drop1() { return ns3::MakeCallback(&Drop<1>); }
    }
    """
)
c = cppyy.gbl.bench_counts
# Device 0 is the client's, device 1 the server's (the error model is on device 1).
client, server = scope["devs"].Get(0), scope["devs"].Get(1)
client.TraceConnectWithoutContext("PhyTxBegin", c.tx0())
server.TraceConnectWithoutContext("PhyTxBegin", c.tx1())
client.TraceConnectWithoutContext("MacRx", c.rx0())
server.TraceConnectWithoutContext("MacRx", c.rx1())
client.TraceConnectWithoutContext("PhyRxDrop", c.drop0())
server.TraceConnectWithoutContext("PhyRxDrop", c.drop1())
exec(compile(split + run, REFERENCE, "exec"), scope)  # noqa: S102
print(
    f"ns3 counts: first_send_s={c.first_tx:g} client_sent={c.tx[0]} "
    f"server_received={c.rx[1]} lost_to_server={c.drop[1]} server_sent={c.tx[1]} "
    f"client_received={c.rx[0]} lost_to_client={c.drop[0]} "
    f"bytes_per_packet={c.tx_bytes[0] / max(c.tx[0], 1):g}"
)
