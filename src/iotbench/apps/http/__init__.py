"""HTTP/1.1 (h11) and HTTP/2 (h2) servers and clients over the simulator's TCP."""
