"""Nsight Systems reports (the SQLite export, and ``.nsys-rep`` through ``nsys export``) as traces.

Read with SQL only (aggregations, window functions, ordered cursors): no table is loaded into
Python, so a GB-sized export is read in bounded memory. What is read and how it maps onto the
summary: docs/nsys-reports.md.
"""
