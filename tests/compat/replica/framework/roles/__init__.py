"""Role classes: what the tests get as fixtures."""
