"""Checks that completions served by `fbt serve` give the text `fbt generate`
printed for the same prompt, and that repeated requests gave the same text.

usage: same_as_generate.py GENERATED.txt PROMPT SERVED.json [SERVED.json ...]

GENERATED.txt is fbt generate's output (the prompt, the new text, a newline);
each SERVED.json a /v1/completions response (its first choice's text is the
new text alone). Prints `same`, or `differ:` and the texts (exit status 1).
"""
import json
import sys


def main():
    generated, prompt, served = sys.argv[1], sys.argv[2], sys.argv[3:]
    texts = [json.load(open(f))["choices"][0]["text"] for f in served]
    ours = open(generated).read()
    if all(t == texts[0] for t in texts) and ours == prompt + texts[0] + "\n":
        print("same")
    else:
        print("differ: %r vs %r" % (ours, texts))
        sys.exit(1)


if __name__ == "__main__":
    main()
