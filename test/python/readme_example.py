"""Prints the README's Python example: its one ```python block."""
import re
import sys

with open(sys.argv[1], encoding="utf-8") as f:
    blocks = re.findall(r"^```python\n(.*?)^```$", f.read(), re.M | re.S)
if len(blocks) != 1:
    sys.exit("readme_example.py: expected one ```python block, found %d" % len(blocks))
sys.stdout.write(blocks[0])
