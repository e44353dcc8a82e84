//! Prints what the subprocess runtime can enforce on this machine: the probed host capabilities
//! and the protection report of a sample run (`cargo run -p agentic-runtime --example protections`).
//!
//! Pass `--run-as-nobody` to see the report when steps run as uid 65534.

use std::time::Duration;

use agentic_runtime::{ExecutionRequest, IsolatedTaskRuntime, RunAs, SubprocessRuntime};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut runtime = SubprocessRuntime::new();
    if std::env::args().any(|arg| arg == "--run-as-nobody") {
        runtime = runtime.with_run_as(RunAs::NOBODY);
    }
    println!("host capabilities: {:#?}\n", SubprocessRuntime::host_capabilities());
    let workspace = runtime.setup().await?;
    let mut request =
        ExecutionRequest::new(["sh", "-c", "id; cat /proc/self/limits | grep -E 'cpu|processes|files|data'"])
            .with_timeout(Duration::from_secs(10));
    request.limits.cpu_time_s = Some(10);
    request.limits.memory_mb = Some(512);
    request.limits.max_processes = Some(64);
    request.limits.max_open_files = Some(256);
    let outcome = runtime.execute(&workspace, &request).await?;
    println!("{}", outcome.stdout.text);
    println!("{}", outcome.protections.render_text());
    runtime.cleanup(&workspace).await?;
    Ok(())
}
