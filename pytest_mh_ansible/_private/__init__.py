"""Private machinery of pytest-mh-ansible; nothing here is a public API.

Grouped by concept, each group a package that says what it owns:

- ``ansible/``: the Ansible boundary (inventory, vault, transport, executors, playbooks, collection);
- ``rollback/``: what feeds the journal (inverses, service state) and the drift check;
- ``session/``: the session, host assignment, locks, dead hosts, signals;
- ``reporting/``: artifacts, logs, the reporting plugin, the crash check;
- ``lab/``: the local lab of isolated hosts; ``cli.py``: the ``pytest-mh-ansible`` command.

Two small modules stand at the top because every layer uses them: ``secrets`` (masking of
secret values in messages, logs and reports) and ``teardown`` (run every step, gather errors).
"""
