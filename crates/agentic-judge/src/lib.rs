//! LLM-as-judge for agentic: anchored rubric prompts, structured verdicts, swap-order
//! pairwise judging, calibration against human labels and drift checks.
//!
//! This crate is not a model client of its own: it talks to models through the provider
//! client of `agentic-adapters`. Nothing here is implemented yet; the judge issue fills it.
