#!/usr/bin/env python3
"""Engine overhead per step, agentic vs LangGraph, side by side on this machine.

    pip install langgraph            # only this benchmark needs it
    python3 benches/langgraph/compare.py [--repeats N] [--python PYTHON]

Builds and runs `crates/agentic-engine/examples/overhead.rs` (release) twice, without and
with a run directory (events.jsonl, run.json, result.json written), then
`benches/langgraph/bench_langgraph.py` with the same graphs: a chain of 1000 no-op steps and
a fan-out/fan-in of 100 branches x 10 steps. Prints a Markdown table with the ratio
LangGraph / agentic of the median overhead per step.
"""

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def run_json(command):
    output = subprocess.run(command, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--python", default=sys.executable, help="a Python with langgraph installed")
    args = parser.parse_args()
    try:
        subprocess.run([args.python, "-c", "import langgraph"], check=True, capture_output=True)
    except subprocess.CalledProcessError:
        sys.exit(f"error: `{args.python}` cannot import langgraph; run `{args.python} -m pip install langgraph` "
                 "(or pass --python with one that can)")
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "agentic-engine", "--example", "overhead"], cwd=ROOT,
                   check=True)
    binary = os.path.join(ROOT, "target", "release", "examples", "overhead")
    bare = run_json([binary, "--repeats", str(args.repeats), "--json"])
    recorded = run_json([binary, "--repeats", str(args.repeats), "--json", "--run-dir"])
    langgraph = run_json([args.python, os.path.join(ROOT, "benches", "langgraph", "bench_langgraph.py"),
                          "--repeats", str(max(3, args.repeats // 4)), "--json"])
    print(f"LangGraph {langgraph['version']}; medians over {args.repeats} runs (agentic) and "
          f"{langgraph['repeats']} runs (LangGraph), after one warm-up run each.\n")
    print("| graph | steps | LangGraph us/step | agentic us/step | ratio | agentic with run dir us/step | ratio |")
    print("|---|---|---|---|---|---|---|")
    for graph in langgraph["results"]:
        name = graph["graph"]
        ours = next(item for item in bare["results"] if item["graph"] == name)
        ours_dir = next(item for item in recorded["results"] if item["graph"] == name)
        theirs = graph["median_per_step_us"]
        print(f"| {name} | {graph['steps']} | {theirs:.1f} | {ours['median_per_step_us']:.2f} | "
              f"{theirs / ours['median_per_step_us']:.0f}x | {ours_dir['median_per_step_us']:.2f} | "
              f"{theirs / ours_dir['median_per_step_us']:.0f}x |")


if __name__ == "__main__":
    main()
