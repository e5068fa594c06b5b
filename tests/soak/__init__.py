"""The rollback fault soak: a generated suite of random reversible changes, run with injected faults.

See docs/soak.md. ``python -m tests.soak --profile full`` runs it; ``test_soak_short.py`` runs the
short profile as a test.
"""
