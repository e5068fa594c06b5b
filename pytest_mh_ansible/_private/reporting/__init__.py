"""What a run tells its user: artifacts fetched from the hosts (``artifacts``), per-test and session
logs (``logs``), the reporting plugin with its options, header, JUnit properties, interruption and
timeouts (``reporting``), and the crash check after each test (``crash_check``).
"""
