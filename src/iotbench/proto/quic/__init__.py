"""QUIC (RFC 9000/9001/9002) from aioquic, driven in virtual time."""
