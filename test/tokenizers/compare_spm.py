"""Compares a token file written by `fbt tokenize --tokenizer sp:MODEL` with
spm_encode's ids of the same text.

usage: compare_spm.py TOKENS.bin SPM_IDS.txt

The token file holds one document: BOS, then the text's ids; SPM_IDS.txt
holds spm_encode --output_format=id's ids (whitespace-separated). Prints
`bos ID`, then `same`, or `differ:` and the first ids of each (exit
status 1).
"""
import struct
import sys


def main():
    d = open(sys.argv[1], "rb").read()
    # The header (1024 bytes) starts with magic, version and the id count (int32s).
    n = struct.unpack("<3i", d[:12])[2]
    ours = list(struct.unpack("<%dH" % n, d[1024:]))
    want = [int(x) for x in open(sys.argv[2]).read().split()]
    print("bos", ours[0])
    if ours[1:] == want:
        print("same")
    else:
        print("differ: %s vs %s" % (ours[1:20], want[:20]))
        sys.exit(1)


if __name__ == "__main__":
    main()
