"""concurrent.py BATCHED ALONE PROMPT|REGIME|TOKENS...: sends one completion
request of TOKENS new tokens per argument to the server at BATCHED, all at
once, sampled at temperature 1 with seed 7 (so that the text follows any
change of the logits), then the same requests one after another to the server
at ALONE (a decode batch of one, whose answers serve.test checks against
`fbt generate`), and compares. Prints `PROMPT|REGIME|same` or
`PROMPT|REGIME|differ: BATCHED vs ALONE`. Both servers put the bytes through
the same UTF-8 repair, so raw bytes sampled at temperature 1 compare exactly."""
import json
import sys
import threading
import urllib.request

batched, alone = sys.argv[1:3]
jobs = [a.split("|") for a in sys.argv[3:]]


def complete(url, prompt, regime, tokens):
    body = json.dumps({"prompt": prompt, "max_tokens": int(tokens), "temperature": 1, "seed": 7,
                       "regime": regime}).encode()
    request = urllib.request.Request(url + "/v1/completions", body,
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as r:
        return json.load(r)["choices"][0]["text"]


served = [None] * len(jobs)


def send(i, job):
    served[i] = complete(batched, *job)


threads = [threading.Thread(target=send, args=(i, job)) for i, job in enumerate(jobs)]
for t in threads:
    t.start()
for t in threads:
    t.join()
for job, text in zip(jobs, served):
    ours = complete(alone, *job)
    verdict = "same" if ours == text else "differ: %r vs %r" % (text, ours)
    print("%s|%s|%s" % (job[0], job[1], verdict))
