"""A paho-mqtt client for the emulation tests: subscribes to a topic, publishes
N QoS 1 messages to it and prints how many came back before a deadline.

Usage: mqtt_roundtrip.py BROKER_ADDRESS N TIMEOUT_S"""

import sys
import threading

import paho.mqtt.client as mqtt

broker, count, timeout = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
received: set[bytes] = set()
subscribed = threading.Event()
done = threading.Event()


def on_connect(client, _userdata, _flags, _reason, _properties):
    client.subscribe("emulate/t", qos=1)


def on_subscribe(_client, _userdata, _mid, _reasons, _properties):
    subscribed.set()


def on_message(_client, _userdata, message):
    received.add(message.payload)
    if len(received) == count:
        done.set()


client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="emulate-test")
client.on_connect, client.on_subscribe, client.on_message = on_connect, on_subscribe, on_message
client.connect(broker, 1883, keepalive=60)
client.loop_start()
if not subscribed.wait(timeout):
    sys.exit("not subscribed")
for i in range(count):
    client.publish("emulate/t", f"m{i}".encode(), qos=1)
done.wait(timeout)
print(len(received), flush=True)
client.loop_stop()
