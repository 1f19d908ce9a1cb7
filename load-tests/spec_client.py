"""The OpenAI completions client of the speculative-decoding benchmarks (speculative_ngram.sh,
speculative_draft.sh): one greedy request, or n at once, with the accepted/proposed counts the
server reports in usage.completion_tokens_details."""
import json
import threading
import time
import urllib.request


def complete(port, prompt, max_tokens, timeout=900):
    """(completion tokens, seconds, accepted, proposed, text) of one greedy request."""
    body = json.dumps({"prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", body, {"Content-Type": "application/json"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=timeout) as r:
        out = json.load(r)
    u = out["usage"]
    d = u.get("completion_tokens_details") or {}
    a = d.get("accepted_prediction_tokens", 0)
    return u["completion_tokens"], time.perf_counter() - t0, a, a + d.get("rejected_prediction_tokens", 0), \
        out["choices"][0]["text"]


def streams(port, prompts, n, max_tokens):
    """n concurrent requests over prompts: (tokens / wall seconds, accepted, proposed)."""
    results = [None] * n

    def one(i):
        results[i] = complete(port, prompts[i % len(prompts)], max_tokens)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    return sum(r[0] for r in results) / wall, sum(r[2] for r in results), sum(r[3] for r in results)
