"""The local lab: isolated hosts (netns + overlay over / + sshd) on this machine, for integration tests."""
