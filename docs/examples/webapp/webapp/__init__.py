"""The example project's test framework: roles, utilities and topologies for a web server and its client."""
