"""Times commands against each other in alternating rounds, so each is measured in the same
host state (see docs/benchmarks.md): each round runs `cat TRACE > /dev/null` (to warm the page
cache), then each command in turn; wall time by `time.perf_counter`, CPU time and peak RSS by
`os.wait4`. Prints best and median wall and CPU per command, the largest peak RSS and the exit
codes seen. `run.sh` (ALTERNATE=N) uses `alternate` from here.

Usage: python3 benches/compliance/ab.py ROUNDS TRACE CMD1... [";;" CMD2...]...
Example: python3 benches/compliance/ab.py 7 /tmp/t.jsonl \\
           ./old/agentic check benches/compliance/bench.yaml --trace /tmp/t.jsonl --threshold 0 ";;" \\
           ./target/release/agentic check benches/compliance/bench.yaml --trace /tmp/t.jsonl --threshold 0
"""

import os
import subprocess
import sys
import time
from typing import NamedTuple


class Run(NamedTuple):
    wall: float
    cpu: float
    rss_mb: float
    status: int


def alternate(rounds: int, trace: str, commands: list[list[str]]) -> list[list[Run]]:
    """Runs every command once per round, in turn, each after a warming `cat TRACE`; the runs
    of each command, by round."""
    runs: list[list[Run]] = [[] for _ in commands]
    for _ in range(rounds):
        for idx, command in enumerate(commands):
            subprocess.run(["cat", trace], stdout=subprocess.DEVNULL, check=True)
            started = time.perf_counter()
            child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _, status, usage = os.wait4(child.pid, 0)
            wall = time.perf_counter() - started
            runs[idx].append(
                Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status))
            )
    return runs


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
    for command, runs in zip(commands, alternate(rounds, trace, commands)):
        walls = sorted(run.wall for run in runs)
        cpus = sorted(run.cpu for run in runs)
        rss = max(run.rss_mb for run in runs)
        statuses = sorted({run.status for run in runs})
        print(
            f"{' '.join(command)[:60]:60} wall best {walls[0] * 1000:.1f} median {walls[len(walls) // 2] * 1000:.1f} ms;"
            f" CPU best {cpus[0] * 1000:.1f} median {cpus[len(cpus) // 2] * 1000:.1f} ms; peak RSS {rss:.1f} MB;"
            f" exit {statuses}"
        )


if __name__ == "__main__":
    main()
