"""Times commands against each other in alternating rounds, so each is measured in the same
host state (see docs/benchmarks.md): each round runs `cat TRACE > /dev/null` (to warm the page
cache), then each command in turn; wall time by `time.perf_counter`, CPU time and peak RSS by
`os.wait4`. Prints best and median wall and CPU per command, and the largest peak RSS.

Usage: python3 benches/compliance/ab.py ROUNDS TRACE CMD1... [";;" CMD2...]...
Example: python3 benches/compliance/ab.py 7 /tmp/t.jsonl \\
           ./old/agentic check benches/compliance/bench.yaml --trace /tmp/t.jsonl --threshold 0 ";;" \\
           ./target/release/agentic check benches/compliance/bench.yaml --trace /tmp/t.jsonl --threshold 0
"""

import os
import subprocess
import sys
import time


def main() -> None:
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    rounds, trace = int(sys.argv[1]), sys.argv[2]
    commands, current = [], []
    for arg in sys.argv[3:]:
        if arg == ";;":
            commands.append(current)
            current = []
        else:
            current.append(arg)
    commands.append(current)
    results = [[] for _ in commands]
    for _ in range(rounds):
        for idx, command in enumerate(commands):
            subprocess.run(["cat", trace], stdout=subprocess.DEVNULL, check=True)
            started = time.perf_counter()
            child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _, _, usage = os.wait4(child.pid, 0)
            wall = time.perf_counter() - started
            results[idx].append((wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024))
    for command, runs in zip(commands, results):
        walls = sorted(run[0] for run in runs)
        cpus = sorted(run[1] for run in runs)
        rss = max(run[2] for run in runs)
        print(
            f"{' '.join(command)[:60]:60} wall best {walls[0] * 1000:.1f} median {walls[len(walls) // 2] * 1000:.1f} ms;"
            f" CPU best {cpus[0] * 1000:.1f} median {cpus[len(cpus) // 2] * 1000:.1f} ms; peak RSS {rss:.1f} MB"
        )


if __name__ == "__main__":
    main()
