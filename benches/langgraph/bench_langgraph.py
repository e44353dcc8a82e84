#!/usr/bin/env python3
"""LangGraph side of the engine-overhead benchmark: the same graphs as
crates/agentic-engine/examples/overhead.rs, built from no-op nodes.

    pip install langgraph
    python3 benches/langgraph/bench_langgraph.py [--repeats N] [--json]

Graphs: a chain of 1000 nodes, and a fan-out/fan-in of 100 branches of 10 nodes between a
`start` and a `join` node (1002 nodes). Graph compilation is not timed; each timed round is
one `invoke`. The median over the rounds is reported, after one warm-up round.
"""

import argparse
import json
import statistics
import time
from typing import TypedDict

from langgraph.graph import END, START, StateGraph


class State(TypedDict, total=False):
    n: int


def noop(_state):
    return {}


def chain(steps):
    graph = StateGraph(State)
    for idx in range(steps):
        graph.add_node(f"s{idx}", noop)
    graph.add_edge(START, "s0")
    for idx in range(1, steps):
        graph.add_edge(f"s{idx - 1}", f"s{idx}")
    graph.add_edge(f"s{steps - 1}", END)
    return graph.compile(), steps


def fan(branches, depth):
    graph = StateGraph(State)
    graph.add_node("start", noop)
    graph.add_node("join", noop)
    graph.add_edge(START, "start")
    for branch in range(branches):
        for level in range(depth):
            graph.add_node(f"b{branch}_{level}", noop)
            parent = "start" if level == 0 else f"b{branch}_{level - 1}"
            graph.add_edge(parent, f"b{branch}_{level}")
    graph.add_edge([f"b{branch}_{depth - 1}" for branch in range(branches)], "join")
    graph.add_edge("join", END)
    return graph.compile(), branches * depth + 2


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = []
    for name, (graph, steps) in [("chain_1000", chain(1000)), ("fanout_100x10", fan(100, 10))]:
        config = {"recursion_limit": 10_000}
        totals = []
        for round_ in range(args.repeats + 1):
            started = time.perf_counter()
            graph.invoke({"n": 0}, config)
            elapsed = time.perf_counter() - started
            if round_ > 0:
                totals.append(elapsed)
        total = statistics.median(totals)
        results.append({
            "graph": name,
            "steps": steps,
            "median_total_ms": round(total * 1e3, 3),
            "median_per_step_us": round(total * 1e6 / steps, 3),
        })
    if args.json:
        from importlib.metadata import version
        print(json.dumps({"framework": "langgraph", "version": version("langgraph"), "repeats": args.repeats, "results": results}))
    else:
        for item in results:
            print(f"{item['graph']:<16} {item['steps']:>5} steps  median {item['median_total_ms']:>9.3f} ms  "
                  f"{item['median_per_step_us']:>8.3f} us/step")


if __name__ == "__main__":
    main()
