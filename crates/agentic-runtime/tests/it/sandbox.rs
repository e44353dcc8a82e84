//! Sandbox tests: timeout and process-group kill, cancellation, output cap, environment,
//! resource limits, Landlock and the network namespace, each checked against the report.
