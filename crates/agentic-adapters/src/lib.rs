//! Adapter traits (agent, tool, workflow, trace), model providers and trace-format ingest.
//!
//! **API Boundary:** third-party agent frameworks and model services integrate here and
//! nowhere else. Nothing here is implemented yet; the engine and compliance issues fill it.
