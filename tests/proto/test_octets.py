from iotbench.proto.octets import ONE_BYTE, as_bytes


def test_one_byte_holds_every_byte_value_in_order():
    assert len(ONE_BYTE) == 256
    for n, octet in enumerate(ONE_BYTE):
        assert type(octet) is bytes
        assert octet == bytes((n,))


def test_as_bytes_keeps_bytes_and_copies_the_rest():
    data = b"\x41\x60abc"
    assert as_bytes(data) is data
    for other in (bytearray(data), memoryview(data), memoryview(b"x" + data)[1:]):
        converted = as_bytes(other)
        assert type(converted) is bytes and converted == data
