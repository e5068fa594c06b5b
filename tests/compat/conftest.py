"""The pytest-mh-style suite under suite/ is run by tests/integration/compat (and bench/compat_suite.py), not here."""

collect_ignore = ["suite"]
