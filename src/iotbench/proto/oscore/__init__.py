"""OSCORE (RFC 8613), with RFC 9175's Echo for replay-window recovery.

context.py derives a security context and holds its AEAD and mutable state;
option.py is the OSCORE option's codec; message.py turns one CoAP message
into its OSCORE form and back; layer.py (with client.py and server.py, and
the tables of bindings.py and cache.py) is the datagram layer that
proto/coap/secured.py puts under a CoAP endpoint. docs/coap.md, "OSCORE",
says what is built and what is not.
"""
