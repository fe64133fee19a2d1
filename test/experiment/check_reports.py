#!/usr/bin/env python3
"""Checks every report folder (one holding results.json, at any depth) under DOCS with
experiment_report.py --check; prints each that differs, then the count.

    check_reports.py DOCS EXPERIMENT_REPORT.py"""

import os
import subprocess
import sys

docs, tool = sys.argv[1], sys.argv[2]
folders = sorted(root for root, _, files in os.walk(docs) if "results.json" in files)
differ = 0
for folder in folders:
    r = subprocess.run([sys.executable, tool, folder, "--check"], capture_output=True, text=True)
    if r.returncode != 0:
        differ += 1
        sys.stdout.write(r.stdout + r.stderr)
print("reports: %d checked, %d differ" % (len(folders), differ))
sys.exit(1 if differ or not folders else 0)
