"""Parallel runs with pytest-xdist: host pools, the pool scheduler and ``--dist loadgroup``.

``pools`` decides which free hosts a worker gets for a topology (no pytest, no xdist);
``scheduler`` is the xdist scheduler that hands out (topology, hosts) units to workers;
``worker`` is the worker's side (what it collected, which hosts the scheduler gave it);
``groups`` keeps ``--dist loadgroup`` grouping a topology's tests on one worker.
"""
