"""The replica's test framework: a directory service ("replica") on a server host, used from a client host."""
