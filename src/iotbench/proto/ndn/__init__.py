"""Named Data Networking: packet format v0.3, NDNLPv2, signatures, forwarder parts, S5 app API.

Modules, one job each:

- tlv, types: TLV primitives and assigned numbers;
- name, interest, data, siginfo, lp, packet: the packets, kept in wire format;
- signing: DigestSha256, HMAC-SHA256, ECDSA-SHA256 (RFC 6979), AES-CCM;
- fib, pit, cs, dead_nonce, strategy, forwarder: the forwarder;
- fragmentation: S5's 3-byte-header hop-by-hop fragmentation;
- app: S5's application API; profiles: device CPU costs and RAM budgets.
"""
