"""Repair dataset exports: supervised recovery, preference pairs, diagnosis, start states."""
