"""Writes a Claude Code hook trace for timing `agentic check` on hook records (see
docs/benchmarks.md): N tool calls, each a PreToolUse and a PostToolUse record as Claude Code
writes them, one session, five tools in turn.

Usage: python3 benches/compliance/hooks_trace.py OUT.jsonl [CALLS]   (default 100000 calls)
"""

import json
import sys


def main() -> None:
    out, calls = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    tools = ["Read", "Bash", "Write", "Edit", "Grep"]
    with open(out, "w", encoding="utf-8") as trace:
        for i in range(calls):
            tool = tools[i % len(tools)]
            if tool == "Bash":
                tool_input = {"command": f"cargo test -p p{i % 13}"}
            else:
                tool_input = {"file_path": f"/repo/src/m{i % 97}/f{i % 1000}.rs"}
            record = {
                "session_id": "s1",
                "transcript_path": "/x/t.jsonl",
                "cwd": "/repo",
                "tool_name": tool,
                "tool_input": tool_input,
                "tool_use_id": f"toolu_{i:08d}",
            }
            trace.write(json.dumps(dict(record, hook_event_name="PreToolUse")) + "\n")
            trace.write(json.dumps(dict(record, hook_event_name="PostToolUse", tool_response={"ok": True})) + "\n")


if __name__ == "__main__":
    main()
