"""Utilities: local users, and the directory with its service."""
