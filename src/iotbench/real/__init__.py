"""Real mode: the simulator's sans-I/O stacks behind real asyncio sockets."""
