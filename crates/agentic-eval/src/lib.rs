//! Scoring for agentic: hard gates, the normalization formula registry, rubrics, scoring
//! profiles, deterministic grading, case suites, run comparison and promotion policy.
//!
//! This crate is pure: it takes data in and returns data out. It does no IO, spawns no
//! processes and calls no network; callers (the engine, the server, the CLI) do that.
