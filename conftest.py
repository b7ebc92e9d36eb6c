"""Pytest configuration: the project root on sys.path, so `hw`, `golden` and `tb` import."""
