"""The pytest-mh-style suites under suite/ and replica/ are run by tests/integration/compat (and bench/), not here."""

collect_ignore = ["suite", "replica"]
