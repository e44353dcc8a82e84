"""Writes an OTLP/JSON trace for timing `agentic check` on OTLP exports (see
docs/benchmarks.md, "OTLP/JSON"): EXPORTS one-line exports of SPANS tool spans each
(`execute_tool`, with `gen_ai.tool.call.arguments`), in one trace under one agent span that
is exported first, as a batching SDK writes them.

Usage: python3 benches/compliance/otlp_trace.py OUT.jsonl [EXPORTS] [SPANS]
       (default 20000 exports of 5 spans: 100,000 tool spans, about 56 MB)
"""

import json
import sys


def attribute(key, value):
    return {"key": key, "value": {"stringValue": value}}


def main() -> None:
    out = sys.argv[1]
    exports = int(sys.argv[2]) if len(sys.argv) > 2 else 20_000
    per_export = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    tools = ["Read", "Bash", "Write", "Edit", "Grep"]
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    agent_id = "00f067aa0ba902b7"
    start = 1_718_000_000_000_000_000
    resource = {"attributes": [attribute("service.name", "agent")]}
    scope = {"name": "agent_framework", "version": "1.0"}
    total = exports * per_export
    with open(out, "w", encoding="utf-8") as trace:
        agent = {
            "traceId": trace_id,
            "spanId": agent_id,
            "name": "invoke_agent coder",
            "kind": 1,
            "startTimeUnixNano": str(start),
            "endTimeUnixNano": str(start + (total + 1) * 1_000_000),
            "attributes": [attribute("gen_ai.operation.name", "invoke_agent"), attribute("gen_ai.agent.name", "coder")],
        }
        document = {"resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": scope, "spans": [agent]}]}]}
        trace.write(json.dumps(document, separators=(",", ":")) + "\n")
        n = 0
        for _ in range(exports):
            spans = []
            for _ in range(per_export):
                tool = tools[n % len(tools)]
                if tool == "Bash":
                    arguments = {"command": f"cargo test -p p{n % 13} -- --nocapture", "timeout": 120000}
                else:
                    arguments = {"file_path": f"/repo/src/module{n % 97}/file{n % 1000}.rs", "limit": 2000}
                begin = start + (n + 1) * 1_000_000
                spans.append(
                    {
                        "traceId": trace_id,
                        "spanId": f"{n + 1:016x}",
                        "parentSpanId": agent_id,
                        "name": f"execute_tool {tool}",
                        "kind": 1,
                        "startTimeUnixNano": str(begin),
                        "endTimeUnixNano": str(begin + 900_000),
                        "attributes": [
                            attribute("gen_ai.operation.name", "execute_tool"),
                            attribute("gen_ai.tool.name", tool),
                            attribute("gen_ai.tool.call.id", f"call_{n:010d}"),
                            attribute("gen_ai.tool.call.arguments", json.dumps(arguments)),
                        ],
                        "status": {"code": 1},
                    }
                )
                n += 1
            document = {"resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": scope, "spans": spans}]}]}
            trace.write(json.dumps(document, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
