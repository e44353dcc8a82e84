#!/usr/bin/env python3
"""Re-record the bundled cassettes of the example workflows.

The cassettes let `agentic run examples/workflows/<name>.yaml --provider replay` run offline.
They were recorded against this scripted OpenAI-compatible server (loopback only): it answers
each agent step with a fixed, hand-written reply chosen from the prompt, so the recordings are
reproducible. Re-run this script after changing a prompt, a `with:` value or a dataset sample
of code_review.yaml or fullstack_generation.yaml:

    cargo build -p agentic-server
    python3 examples/cassettes/record_examples.py [path/to/agentic]

It rewrites examples/cassettes/<workflow>.jsonl for code_review, fullstack_generation,
agent_summary and plan_implementation, then replays every run offline and fails if any run does
not end as expected (plan_implementation fails its first attempt on purpose and passes the second,
to show iterative repair).
"""

import http.server
import json
import os
import re
import subprocess
import sys
import tempfile
import threading

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

REVIEWS = {
    "src/pricing.py": {
        "findings": [
            {"line": 2, "severity": "medium",
             "message": "`percent` is not validated: values below 0 or above 100 produce negative or inflated prices (the TODO says so)."},
            {"line": 7, "severity": "low",
             "message": "`total` raises KeyError when an item lacks `price` or `qty`; validate items or document the contract."},
        ],
        "verdict": "request_changes",
    },
    "src/auth.py": {
        "findings": [
            {"line": 5, "severity": "high",
             "message": "MD5 is not a password hash: use a slow salted KDF such as bcrypt, scrypt or argon2."},
            {"line": 9, "severity": "medium",
             "message": "Digests are compared with `==`; use `hmac.compare_digest` to avoid timing leaks."},
        ],
        "verdict": "request_changes",
    },
    "src/cache.py": {
        "findings": [
            {"line": 6, "severity": "medium",
             "message": "`get` scans a list, so lookups are O(n); store items in a dict for O(1) access."},
            {"line": 12, "severity": "low",
             "message": "`put` appends duplicates instead of replacing an existing key, so stale values can be returned."},
        ],
        "verdict": "request_changes",
    },
}

SUMMARIES = {
    "src/pricing.py": "Changes requested: `apply_discount` accepts any percent, so out-of-range values corrupt prices. "
                      "`total` also assumes every item has `price` and `qty`.",
    "src/auth.py": "Changes requested: passwords are hashed with MD5, which is unsafe; switch to bcrypt, scrypt or argon2. "
                   "Compare digests with `hmac.compare_digest`.",
    "src/cache.py": "Changes requested: the cache does linear scans and keeps duplicate keys. "
                    "Backing it with a dict fixes both the O(n) lookups and the stale values.",
}

PLANS = {
    "slug": {"functions": [{"name": "slugify", "purpose": "Lowercase a title, drop punctuation and join the words with hyphens."}]},
    "stats": {"functions": [{"name": "median", "purpose": "Return the median of a non-empty list of numbers."}]},
}

SOURCES = {
    "slug": {
        "source": (
            "import re\n\n\n"
            "def slugify(title):\n"
            "    \"\"\"Lowercase `title`, drop punctuation and join the words with hyphens.\"\"\"\n"
            "    words = re.findall(r\"[a-z0-9]+\", title.lower())\n"
            "    return \"-\".join(words)\n"
        ),
        "tests": (
            "import unittest\n\n"
            "from slug import slugify\n\n\n"
            "class SlugifyTest(unittest.TestCase):\n"
            "    def test_words_are_joined_with_hyphens(self):\n"
            "        self.assertEqual(slugify(\"Hello World\"), \"hello-world\")\n\n"
            "    def test_punctuation_is_dropped(self):\n"
            "        self.assertEqual(slugify(\"Rust, Python & Go!\"), \"rust-python-go\")\n\n"
            "    def test_empty_title(self):\n"
            "        self.assertEqual(slugify(\"\"), \"\")\n\n\n"
            "if __name__ == \"__main__\":\n"
            "    unittest.main()\n"
        ),
    },
    "stats": {
        "source": (
            "def median(numbers):\n"
            "    \"\"\"Return the median of a non-empty list of numbers.\"\"\"\n"
            "    if not numbers:\n"
            "        raise ValueError(\"median() needs at least one number\")\n"
            "    ordered = sorted(numbers)\n"
            "    middle = len(ordered) // 2\n"
            "    if len(ordered) % 2:\n"
            "        return ordered[middle]\n"
            "    return (ordered[middle - 1] + ordered[middle]) / 2\n"
        ),
        "tests": (
            "import unittest\n\n"
            "from stats import median\n\n\n"
            "class MedianTest(unittest.TestCase):\n"
            "    def test_odd_length(self):\n"
            "        self.assertEqual(median([3, 1, 2]), 2)\n\n"
            "    def test_even_length(self):\n"
            "        self.assertEqual(median([4, 1, 3, 2]), 2.5)\n\n"
            "    def test_empty_list_is_an_error(self):\n"
            "        with self.assertRaises(ValueError):\n"
            "            median([])\n\n\n"
            "if __name__ == \"__main__\":\n"
            "    unittest.main()\n"
        ),
    },
}


SUMMARY = "The release moves to March because the security review found two issues that must be fixed first."

PLAN_SHORT = {"steps": ["Add a `--json` flag to the CLI", "Print the report as JSON"], "risks": ["Output format churn"]}
PLAN_FULL = {
    "steps": [
        "Add a `--json` flag to the CLI parser",
        "Serialize the report with serde",
        "Print the JSON document on stdout and keep logs on stderr",
        "Add an integration test that parses the output",
    ],
    "risks": ["Output format churn", "Logs mixed into stdout"],
}


# The judge's scores (1..5) for the judged criteria of each run, chosen by what the judged run
# was about. Evidence quotes the candidate output.
JUDGE_SCORES = [
    ("src/pricing.py", {"correctness_rubric": 4, "completeness_rubric": 4, "documentation_quality": 4}),
    ("src/auth.py", {"correctness_rubric": 5, "completeness_rubric": 4, "documentation_quality": 4}),
    ("src/cache.py", {"correctness_rubric": 4, "completeness_rubric": 3, "documentation_quality": 4}),
    ('"module_name": "slug"', {"judge_quality": 4}),
    ('"module_name": "stats"', {"judge_quality": 5}),
    ("Serialize the report with serde", {"correctness_rubric": 4, "completeness_rubric": 4, "documentation_quality": 4}),
    ("Print the report as JSON", {"correctness_rubric": 2, "completeness_rubric": 2, "documentation_quality": 3}),
]


def judge_reply(prompt):
    """A pointwise verdict for every criterion the judge prompt lists (in the presented order)."""
    names = re.findall(r"^### (\S+) \(integer score", prompt, flags=re.M)
    candidate = prompt.split("<candidate>", 1)[1].split("</candidate>", 1)[0].strip()
    quote = candidate.splitlines()[1].strip() if len(candidate.splitlines()) > 1 else candidate[:80]
    for marker, scores in JUDGE_SCORES:
        if marker in prompt:
            return json.dumps({"criteria": [
                {"name": name, "score": scores[name], "evidence": f"the output says: {quote[:120]}"} for name in names
            ]})
    raise KeyError(f"no scripted verdict for judge prompt {prompt[:200]!r}")


def reply_for(model, prompt):
    """The scripted answer: chosen from the step's model tier and the prompt's content."""
    if model == "judge":
        return judge_reply(prompt)
    if model == "writer" and prompt.startswith("Summarize in one sentence:"):
        return SUMMARY
    if model == "planner" and "Plan the implementation of:" in prompt:
        # The first attempt is too short for check_plan; the repair attempt fixes it.
        return json.dumps(PLAN_SHORT if prompt.startswith("Attempt 1.") else PLAN_FULL)
    if model == "reviewer":
        for path, review in REVIEWS.items():
            if f"`{path}`" in prompt:
                return json.dumps(review)
    if model == "writer":
        for path, review in REVIEWS.items():
            if json.dumps(review["findings"][0]["message"])[1:-1] in prompt:
                return SUMMARIES[path]
    if model == "planner":
        for module, plan in PLANS.items():
            if f"named {module} " in prompt:
                return json.dumps(plan)
    if model == "coder":
        for module, source in SOURCES.items():
            if f"`{module}.py`" in prompt:
                return "```json\n" + json.dumps(source, indent=2) + "\n```"
    raise KeyError(f"no scripted reply for model {model!r} and prompt {prompt[:200]!r}")


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][-1]["content"]
        try:
            content = reply_for(body["model"], prompt)
        except KeyError as error:
            self.send_response(400)
            self.end_headers()
            self.wfile.write(str(error).encode())
            return
        answer = {
            "id": "chatcmpl-scripted",
            "object": "chat.completion",
            "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": len(content.split())},
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def main():
    agentic = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target", "debug", "agentic")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    failed = False
    with tempfile.TemporaryDirectory() as runs:
        plans = ["--input", "task=Add a --json flag to the report command", "--allow-experimental"]
        for workflow, extra in [
            ("code_review", ["--dataset", "examples/datasets/code_review.jsonl"]),
            ("fullstack_generation", ["--dataset", "examples/datasets/fullstack_generation.json"]),
            ("agent_summary", ["--dataset", "examples/datasets/summaries.jsonl"]),
            ("plan_implementation", plans),
        ]:
            cassette = os.path.join(ROOT, "examples", "cassettes", f"{workflow}.jsonl")
            if os.path.exists(cassette):
                os.remove(cassette)
            common = [agentic, "run", f"examples/workflows/{workflow}.yaml", *extra, "--runs-dir", runs, "--cassette", cassette]
            record = subprocess.run(common + ["--provider", "openai", "--base-url", base_url, "--record"], cwd=ROOT, env=env)
            replay = subprocess.run(common + ["--provider", "replay"], cwd=ROOT, env=env)
            print(f"{workflow}: record exit {record.returncode}, replay exit {replay.returncode}")
            failed |= record.returncode != 0 or replay.returncode != 0
    server.shutdown()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
