"""How fast the course feels: ``make bench`` runs this, prints the tables and writes ``benchmarks/results.md``.

1. Notebook execution: seconds per notebook in a fresh kernel, and the floor (a kernel that only imports the
   course's libraries) measured in the same run; the ratio of the two.
2. Slider latency: every slider of every notebook, swept over its range; median and 95th percentile of the
   time from a control change to a finished PNG, against 100 ms and 200 ms.
3. Attention kernels: attn_course's scaled dot-product attention and masked softmax against PyTorch's,
   ours / PyTorch's, against 1.5.
4. Generation: time per new token with and without the KV cache, at 64 to 1024 tokens (notebook 09's model).
5. Efficient attention: flash_attention against the fused kernel and the materialised formula, time and peak memory.
6. Linear attention: linear_attention against the fused kernel and the materialised formula over N, time and peak
   memory.

The numbers are reported, not asserted: a person judges them (the machine may be busy with other work; the
load average before and after is in the report). ``--only notebooks,sliders,kernels,generation,efficient,linear``
runs some parts.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import efficient_bench
import generation_bench
import kernel_ratios
import linear_bench
import markdown
import matplotlib
import notebook_times
import slider_latency
import torch

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
RESULTS = Path(__file__).resolve().parent / "results.md"
PARTS = ("notebooks", "sliders", "kernels", "generation", "efficient", "linear")


def _progress(message: str) -> None:
    print(f"  ... {message}", file=sys.stderr, flush=True)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _load() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f}"


def _p95(values: list[float]) -> float:
    """95th percentile, interpolated between the sorted values (numpy's default 'linear' method)."""
    ordered = sorted(values)
    position = 0.95 * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def notebooks_section(result: dict) -> str:
    floor = result["floor"]
    rows = [
        [name, f"{seconds:.1f}", f"{seconds / floor:.1f}"] if isinstance(seconds, float) else [name, seconds, ""]
        for name, seconds in result["notebooks"].items()
    ]
    rows.append(["floor: start a kernel, import the libraries", f"{floor:.1f}", "1.0"])
    runs = ", ".join(f"{s:.1f} s" for s in result["floor_runs"])
    return (
        markdown.table(["notebook", "seconds", "ratio to floor"], rows)
        + f"\n\nFloor runs (before and after the notebooks): {runs}."
    )


def sliders_section(records: list[dict]) -> tuple[str, list[str]]:
    rows, misses = [], []
    for r in records:
        median, p95 = statistics.median(r["seconds"]), _p95(r["seconds"])
        target_median, target_p95 = slider_latency.targets(r.get("continuous", True))
        ok = median < target_median and p95 < target_p95
        where = f"{r['notebook'][:2]} {r['panel']} / {r['control']}"
        if not ok:
            misses.append(where)
        if r.get("inside") is not None and r["inside"] < len(r["seconds"]):
            misses.append(f"{where} (pictures cut at an edge)")
        if r.get("same") is not None and r["same"] < len(r["seconds"]):
            misses.append(f"{where} (pictures unlike the figure drawn alone)")
        rows.append(
            [
                r["notebook"][:2],
                r["panel"],
                f"{r['control']} ({r['argument']})",
                "while dragged" if r.get("continuous", True) else "on release",
                str(len(r["seconds"])),
                _ms(median),
                _ms(p95),
                _ms(max(r["seconds"])),
                f"{_ms(target_median)} / {_ms(target_p95)}",
                "pass" if ok else "MISS",
                "-" if r.get("same") is None else f"{r['same']}/{len(r['seconds'])}",
                "-" if r.get("inside") is None else f"{r['inside']}/{len(r['seconds'])}",
                f"{r['ahead']} in {r['build']:.1f} s" if r.get("ahead") else "-",
            ]
        )
    header = [
        "nb",
        "panel",
        "control",
        "redraws",
        "values",
        "median ms",
        "p95 ms",
        "max ms",
        "target ms",
        "verdict",
        "same",
        "inside",
        "drawn ahead",
    ]
    return markdown.table(header, rows), misses


def kernels_section(results: list[kernel_ratios.Comparison]) -> tuple[str, list[str]]:
    rows, misses = [], []
    for c in results:
        ok = c.ratio <= kernel_ratios.TARGET
        if c.headline and not ok:
            misses.append(f"{c.operation} at {c.size}")
        verdict = ("pass" if ok else "MISS") if c.headline else "(info)"
        rows.append(
            [
                c.operation,
                "B={}, H={}, Q=K={}, D={}".format(*c.size),
                c.reference,
                f"{c.ours * 1e6:.1f}",
                f"{c.theirs * 1e6:.1f}",
                f"{c.ratio:.2f}",
                verdict,
            ]
        )
    header = ["attn_course", "size", "PyTorch", "ours us", "PyTorch us", "ours / PyTorch", "<= 1.5"]
    return markdown.table(header, rows), misses


def generation_section(rows: list[dict]) -> str:
    table = [[str(r["length"]), f"{r['cache_ms']:.2f}", f"{r['no_cache_ms']:.2f}", f"{r['speedup']:.1f}"] for r in rows]
    return markdown.table(["tokens before", "with cache ms", "without cache ms", "speed-up"], table)


def _generation(threads: int) -> list[dict]:
    """The generation timings, in a process of their own (as the kernel timings)."""
    script = Path(generation_bench.__file__)
    done = subprocess.run([sys.executable, str(script), "--threads", str(threads)], stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{script.name} failed (exit {done.returncode}): see above")
    return json.loads(done.stdout)


def _kernels(threads: int, omp_wait: str) -> list[kernel_ratios.Comparison]:
    """The kernel comparisons, run in a process of their own with OpenMP's wait policy set."""
    env = dict(os.environ, OMP_WAIT_POLICY=omp_wait.upper())
    script = Path(kernel_ratios.__file__)
    done = subprocess.run(
        [sys.executable, str(script), "--threads", str(threads)], env=env, stdout=subprocess.PIPE, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"{script.name} failed (exit {done.returncode}): see above")
    return [kernel_ratios.Comparison(**{**r, "size": tuple(r["size"])}) for r in json.loads(done.stdout)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(PARTS), help="comma-separated parts: " + ", ".join(PARTS))
    parser.add_argument("--output", type=Path, default=RESULTS, help="where to write the Markdown report")
    parser.add_argument(
        "--omp-wait",
        choices=("passive", "active"),
        default="passive",
        help="OpenMP wait policy of the kernel timings (passive: idle threads sleep rather than spin, which keeps "
        "other work on the machine from stalling every parallel region; active: OpenMP's default)",
    )
    args = parser.parse_args(argv)
    parts = [p.strip() for p in args.only.split(",") if p.strip()]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        parser.error(f"--only takes {', '.join(PARTS)}; got {', '.join(unknown)}")

    threads = os.cpu_count() or 1
    torch.set_num_threads(threads)
    notebooks = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    started, load_before, clock = datetime.datetime.now().astimezone(), _load(), time.perf_counter()
    sections, misses = [], []
    if "notebooks" in parts:
        sections.append(
            ("1. Notebook execution", NOTEBOOK_NOTE, notebooks_section(notebook_times.run(notebooks, _progress)))
        )
    if "sliders" in parts:
        table, missed = sliders_section(slider_latency.run(notebooks, _progress))
        sections.append(("2. Slider latency", SLIDER_NOTE, table))
        misses += [f"slider {m}" for m in missed]
    if "kernels" in parts:
        table, missed = kernels_section(_kernels(threads, args.omp_wait))
        note = KERNEL_NOTE.format(threads=threads, omp_wait=args.omp_wait)
        sections.append(("3. Attention kernels", note, table))
        misses += [f"kernel {m}" for m in missed]
    if "generation" in parts:
        sections.append(("4. Generation", GENERATION_NOTE, generation_section(_generation(threads))))
    if "efficient" in parts:
        table, missed = efficient_bench.verdicts(efficient_bench.run(progress=_progress))
        note = efficient_bench.__doc__.split("\n\n", 1)[1].strip()
        sections.append(("5. Efficient attention", note, markdown.table(efficient_bench.HEADER, table)))
        misses += [f"efficient {m}" for m in missed]
    if "linear" in parts:
        table, missed = linear_bench.verdicts(linear_bench.run(progress=_progress))
        note = linear_bench.__doc__.split("\n\n", 1)[1].strip()
        sections.append(("6. Linear attention", note, markdown.table(linear_bench.HEADER, table)))
        misses += [f"linear {m}" for m in missed]

    header = [
        "# Benchmarks",
        "",
        f"Written by `make bench` (benchmarks/bench.py) on {started:%Y-%m-%d %H:%M %Z}, "
        f"in {time.perf_counter() - clock:.0f} s.",
        "",
        f"- Machine: {_cpu_model()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}; "
        f"kernel timings on {threads} torch threads; notebooks with PyTorch's default, slider plots on one thread "
        "(as `slider_panel` runs them)",
        f"- Python {platform.python_version()}, torch {torch.__version__}, matplotlib {matplotlib.__version__}",
        f"- Load average (1, 5, 15 min) before: {load_before}; after: {_load()}. Other work on the machine "
        "slows every timing down; above about 1 per core, read the numbers as upper bounds.",
        f"- Targets missed: {', '.join(misses) if misses else 'none'}.",
    ]
    report = "\n".join(header) + "".join(f"\n\n## {title}\n\n{note}\n\n{table}" for title, note, table in sections)
    print(report)
    if set(parts) == set(PARTS) or args.output != RESULTS:
        args.output.write_text(report + "\n", encoding="utf-8")
        print(f"\nwritten to {args.output}", file=sys.stderr)
    return 0


NOTEBOOK_NOTE = (
    "Each notebook from kernel start to its last cell, as a fresh kernel runs it (nbclient, kernel "
    "`attn-course`, working directory `notebooks/`). The floor is a generated notebook whose one cell selects "
    "the inline backend and imports torch, matplotlib, ipywidgets and attn_course: what every notebook pays "
    "before its first line of teaching. Ratio = notebook / floor."
)
SLIDER_NOTE = (
    "Every `slider_panel` of every notebook, found by running the notebook's cells with a recorder around "
    "`slider_panel`. Each control is swept over its range (15 values of a slider, every option of a dropdown or "
    "checkbox) with the other controls at their defaults; each value is timed from the change to the finished "
    "PNG, as the panel does it (`panel.render(...)`: a figure that takes new values in place gets them and is "
    "drawn again with its layout frozen; any other figure is built anew and drawn once). Targets: a control that "
    "redraws while it is dragged, median under 100 ms and 95th percentile under 200 ms; a control of a heavy panel, "
    "which redraws when it is released (`continuous_update=False`), under 250 and 400 ms.\n\n"
    "Same: how many of the control's pictures are, pixel for pixel, the figure drawn by matplotlib alone (its "
    "own layout engine, a new canvas, no cache). Inside: how many of those figures draw nothing outside the "
    "picture (a tick label or title cut at the edge counts as outside); a picture outside counts as a miss.\n\n"
    "Drawn ahead: a panel whose controls take at most 12 combinations of values in all (options, checkboxes, "
    "short integer sliders) draws every combination when its cell runs, and a change shows the picture already "
    "drawn; the column gives how many pictures, and the seconds the panel took to build (the cell's share, "
    "included in section 1). Such a control's timings are those of showing a drawn picture.\n\n"
    "Not included: the widget messages and the browser's drawing of the picture. A change that gives a figure "
    "other decorations (a colour scale's next step, other tick labels) builds the figure anew, and pays for it."
)
KERNEL_NOTE = (
    "CPU, float32, torch.set_num_threads({threads}) (the machine's cores), OMP_WAIT_POLICY={omp_wait}; "
    "`torch.utils.benchmark.Timer.blocked_autorange`, every statement of a size timed in turn for five rounds, "
    "each keeping its fastest round. Heads fold into attn_course's batch "
    "axis ((B, H, Q, D) viewed as (B * H, Q, D)). Valid lengths lie in [K/2, K]; PyTorch gets the equivalent "
    "boolean mask built beforehand (so it does less work than attn_course, which builds its mask from the "
    "lengths and checks them on every call).\n\n"
    "attn_course's `scaled_dot_product_attention` returns the weights as well as the output, as the course "
    "needs them for heatmaps; PyTorch's fused `F.scaled_dot_product_attention` returns the output only and "
    "never stores the (B, H, Q, K) weights. The target applies to the comparison with the fused kernel; the "
    "rows marked (info) compare with PyTorch's math path (`torch.ops.aten._scaled_dot_product_attention_math`), "
    "which computes and returns the same weights, like for like.\n\n"
    "The (floor) rows time parts of what any function that checks its inputs and returns the weights must do. "
    "At 1024 keys, allocating and writing the (B * H, Q, K) weights alone (256 MB of float32) costs about two "
    "thirds of the whole fused kernel, which never materialises them; attn_course then computes the scores and "
    "the pooling as two matrix products around a softmax. At 10 keys every call takes microseconds and per-call "
    "costs dominate: the input checks, and five to seven ATen calls (each may wake the second thread) where the "
    "fused kernel makes one. `--omp-wait active` times with OpenMP's default policy (on an idle machine)."
)

GENERATION_NOTE = (
    "`benchmarks/generation_bench.py`: notebook 09's `DecoderOnlyLM` (2 layers, D = 128, 4 heads, vocabulary 64, "
    "float32, untrained), one new token after `tokens before` tokens, `attn_course.time_per_token` (the fastest of 5 "
    "runs; with the cache, the cache is filled beforehand). Reported, not asserted."
)


if __name__ == "__main__":
    sys.exit(main())
