"""Emulation: real programs on the host exchange IP packets through the simulated network."""
