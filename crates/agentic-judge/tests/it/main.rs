//! Integration tests of agentic-judge: the protocol against an OpenAI-compatible server on
//! 127.0.0.1 (real HTTP, real wire format) that answers well, sends broken JSON, rate-limits,
//! fails, hangs, or behaves like a biased judge.

mod calibration;
mod hybrid;
mod protocol;
mod support;
mod tier3;
