"""Undoing changes: the inverse of each module call (``inverses``), the service state both the inverses
and the ``svc`` utility read (``service_state``), and the drift check that proves a rollback (``drift``).

The journal itself is public (``pytest_mh_ansible.rollback``); this package holds what feeds it.
"""
