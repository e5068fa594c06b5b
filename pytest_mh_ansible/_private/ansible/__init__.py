"""The Ansible boundary: the only code that imports ansible-core or ansible-runner.

It owns reading inventories and vaults (``inventory``, ``vault``), commands and file copies through
connection plugins (``transport``), module calls in the pytest process (``executor``, the standard
way) and through a warm agent per host (``warm``, ``warm_agent``, which runs on the target),
playbooks through ansible-runner (``playbooks``), the shipped collection (``collection``), and the
private directories of the ssh ControlMaster sockets (``control_dirs``).
Every use of an ansible-core API that is not public goes through ``compat``, one function per use.
"""
