#!/usr/bin/env python3
"""Seed inputs of the trace_db fuzz target: one edit of each kind on three tables (the first byte
of an edit picks the table, the second the kind, the rest its values), so the corpus starts from
every branch of trace_db_fuzz.cpp. Run from this folder: ./make_trace_db_seeds.py"""
import os

os.makedirs('corpus', exist_ok=True)
for kind in range(9):
    for table in (0, 3, 7):
        with open('corpus/edit-%d-%d' % (kind, table), 'wb') as f:
            f.write(bytes([table, kind] + list(range(1, 13))))
