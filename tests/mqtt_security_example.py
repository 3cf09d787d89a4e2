"""The users and the ACL file the MQTT broker security tests share: the unit
tests (tests/proto/mqtt) check our broker on them, the interop tests compare
it with mosquitto on the same files."""

LOGINS = {"alice": "secret", "bob": "hunter2", "admin": "root"}

# mosquitto's acl_file format.
ACL = """\
# anonymous clients: read the public tree
topic read public/#

user alice
topic readwrite sensors/#
topic deny sensors/secret

user bob
topic read sensors/+/temperature
topic write public/#

user admin
topic readwrite #

# every client: its own device tree and its user's inbox
pattern readwrite devices/%c/#
pattern read users/%u/inbox
"""
