"""Private machinery of pytest-mh-ansible; nothing here is a public API."""
