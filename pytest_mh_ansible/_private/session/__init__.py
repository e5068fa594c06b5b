"""The session: which hosts a topology gets, and the life cycle around the tests that use them.

It owns the session object (``session``), matching inventory hosts to a topology's slots
(``assignment``), the per-host locks between pytest-xdist workers (``locks``), leases on the hosts
between controllers (``leases``), connecting hosts in parallel (``connect``), hosts found dead
during the run (``reachability``), and how Ctrl-C and per-test timeouts stop a test (``signals``).
"""
