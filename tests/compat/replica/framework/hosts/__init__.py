"""Host classes: one per role, sharing a backup base."""
