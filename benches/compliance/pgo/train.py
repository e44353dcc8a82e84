#!/usr/bin/env python3
"""Training traces for a profile-guided build (benches/compliance/run.sh with PGO=1).

They are deliberately not the measured trace: other tools, other argument shapes (numbers,
arrays, nested objects), pretty and compact separators, and a Claude Code hook trace with
starts and ends, so that the profile describes traces in general, not the benchmark's lines.

Usage: train.py OUT_DIR   (writes OUT_DIR/train.tooltrace.jsonl and OUT_DIR/train.hooks.jsonl)
"""
import json
import random
import sys

out = sys.argv[1]
random.seed(7)
tools = ["Read", "Bash", "Write", "Edit", "Grep", "Glob", "WebFetch", "Task", "TodoWrite"]
commands = ["ls -la", "npm test", "git status", "pytest -q tests/", "make build"]
with open(f"{out}/train.tooltrace.jsonl", "w") as f:
    parent = None
    for i in range(150000):
        tool = random.choice(tools)
        ts = f"2026-03-{1 + i // 86400 % 28:02d}T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z"
        if tool == "Bash":
            args = {"command": random.choice(commands), "timeout": random.randint(1, 600)}
        elif tool in ("Read", "Write", "Edit"):
            args = {"file_path": f"/src/pkg{random.randint(0, 50)}/m{random.randint(0, 400)}.py"}
        elif tool == "Grep":
            args = {"pattern": "TODO", "path": "src", "glob": "*.py"}
        elif tool == "WebFetch":
            args = {"url": f"https://example.org/p/{i}", "prompt": "summarize"}
        elif tool == "TodoWrite":
            args = {"todos": [{"content": "x", "status": "pending"}]}
        else:
            args = {"description": f"agent {i}", "prompt": "look"}
        record = {"timestamp": ts, "tool_name": tool, "trace_id": f"s{i}", "args": args}
        if tool == "Task":
            record["span_type"] = "parent"
            parent = f"s{i}"
        elif parent and random.random() < 0.4:
            record["span_type"] = "child"
            record["parent_trace_id"] = parent
        else:
            record["span_type"] = "parent"
        separators = (",", ":") if i % 2 else (", ", ": ")
        f.write(json.dumps(record, separators=separators) + "\n")

with open(f"{out}/train.hooks.jsonl", "w") as f:
    for i in range(40000):
        tool = random.choice(["Read", "Bash", "Edit", "Grep"])
        tool_input = {"command": "cargo test"} if tool == "Bash" else {"file_path": f"/r/src/f{i % 300}.rs"}
        base = {"session_id": "sess-1", "cwd": "/r", "tool_name": tool, "tool_input": tool_input,
                "tool_use_id": f"toolu_{i:08d}"}
        f.write(json.dumps({**base, "hook_event_name": "PreToolUse"}) + "\n")
        f.write(json.dumps({**base, "hook_event_name": "PostToolUse", "tool_response": {"ok": True}}) + "\n")
