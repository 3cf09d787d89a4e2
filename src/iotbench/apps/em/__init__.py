"""The Entity Manager (S6): groups of CoAP resources behind one CoAP resource.

profile.py validates what clients send, aggregate.py turns member replies
into one answer, groups.py hands out multicast addresses, manager.py is the
sans-I/O EM that the simulator and `iotbench serve coap-em` both drive.
docs/coap-em.md describes the resource model and every choice.
"""
