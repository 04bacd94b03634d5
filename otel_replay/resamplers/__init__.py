"""Resample functions and verifiers (the attribution issue builds the registry here)."""
