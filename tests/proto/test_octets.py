from iotbench.proto.octets import ONE_BYTE


def test_one_byte_holds_every_byte_value_in_order():
    assert len(ONE_BYTE) == 256
    for n, octet in enumerate(ONE_BYTE):
        assert type(octet) is bytes
        assert octet == bytes((n,))
