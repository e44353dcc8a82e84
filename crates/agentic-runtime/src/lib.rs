//! Isolated task runtimes for agentic: the setup -> execute -> collect -> cleanup lifecycle,
//! with the subprocess runtime as the default.
//!
//! This crate runs processes; it knows nothing of workflows, scoring or HTTP.
//! Nothing here is implemented yet; the execution-engine issue fills it.
