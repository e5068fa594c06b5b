"""An example pytest-mh framework package: config, hosts, roles, utilities, topologies."""
