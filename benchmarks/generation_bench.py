"""Generation: seconds per new token with and without the KV cache, at 64 to 1024 tokens already generated.

The model is notebook 09's decoder-only model at a larger size (2 layers, D = 128, 4 heads, vocabulary 64,
untrained: the weights change nothing about the time). Each time is ``attn_course.time_per_token``: the fastest of
a few runs of one step, the cache filled beforehand. Without the cache, a step reads the whole sequence (its cost
grows with the length, and attention's part with its square); with the cache, a step reads one token and attends
once to the stored keys (its cost grows with the length only through that one row).

Usage (what ``bench.py`` does): ``python generation_bench.py --threads N`` prints the rows as one JSON list of
``{"length", "cache_ms", "no_cache_ms", "speedup"}``.
"""

from __future__ import annotations

import argparse
import json
import sys

import torch

import attn_course as ac

LENGTHS = (64, 128, 256, 512, 1024)
REPEATS = 5


def run(lengths=LENGTHS, repeats: int = REPEATS) -> list[dict]:
    torch.manual_seed(0)
    model = ac.DecoderOnlyLM(64, 128, 4, 2, max(lengths) + 1)
    with_cache = ac.time_per_token(model, lengths, use_cache=True, repeats=repeats)
    without = ac.time_per_token(model, lengths, use_cache=False, repeats=repeats)
    return [
        {"length": n, "cache_ms": c * 1e3, "no_cache_ms": w * 1e3, "speedup": w / c}
        for n, c, w in zip(lengths, with_cache, without, strict=True)
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(json.dumps(run()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
