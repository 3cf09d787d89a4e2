"""DTLS 1.2 record protection (record.py), for S4's security micro-benchmark."""
