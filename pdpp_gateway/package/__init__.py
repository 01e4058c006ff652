"""Packages: one caller, several child grants, each read with its own token.

``fan_out`` routes a call to the members that may answer it and merges what they say;
``search`` merges the members' search pages; ``cursor`` is the merged page's cursor.
"""
