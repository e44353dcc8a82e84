//! Tidy checks that plain `cargo test` runs: file headers, crate layering, examples.
//!
//! Each failure names the rule it enforces and how to fix it.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::project_root;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if name == "target" || name == ".git" || name == "node_modules" {
            continue;
        }
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_rust_file_opens_with_a_module_doc() {
    let root = project_root();
    let mut files = Vec::new();
    for dir in ["crates", "xtask", "benches", "examples", "fuzz"] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 10, "found too few .rs files ({}); is the root right?", files.len());
    let missing: Vec<String> = files
        .iter()
        .filter(|path| {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            !text.trim_start().starts_with("//!")
        })
        .map(|path| path.strip_prefix(&root).unwrap_or(path).display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "rule: every .rs file opens with a `//!` doc saying what it is.\nadd one to:\n  {}",
        missing.join("\n  ")
    );
}

/// The normal (non-dev) dependency names of a workspace package.
fn dependency_names(package: &str) -> Vec<String> {
    let output = Command::new(env!("CARGO"))
        .args(["tree", "--offline", "-p", package, "-e", "normal", "--prefix", "none", "--format", "{p}"])
        .current_dir(project_root())
        .output()
        .expect("cargo runs");
    assert!(output.status.success(), "cargo tree failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn lower_layers_do_no_network_process_or_database_io() {
    let forbidden = ["tokio", "reqwest", "bollard", "sqlx", "hyper", "axum"];
    for package in ["agentic-core", "agentic-eval"] {
        let names = dependency_names(package);
        let found: Vec<&str> = forbidden.iter().copied().filter(|name| names.iter().any(|n| n == name)).collect();
        assert!(
            found.is_empty(),
            "rule: {package} is pure (no async runtime, HTTP, Docker or database), but it depends on {found:?}.\n\
             move the IO into an outer crate (engine, runtime, adapters, server) behind a trait"
        );
    }
}

#[test]
fn crates_depend_only_inward() {
    let allowed: [(&str, &[&str]); 7] = [
        ("agentic-core", &[]),
        ("agentic-eval", &["agentic-core"]),
        ("agentic-runtime", &["agentic-core"]),
        ("agentic-adapters", &["agentic-core"]),
        ("agentic-judge", &["agentic-core", "agentic-eval", "agentic-adapters"]),
        ("agentic-engine", &["agentic-core", "agentic-eval", "agentic-runtime", "agentic-adapters", "agentic-judge"]),
        (
            "agentic-server",
            &["agentic-core", "agentic-eval", "agentic-runtime", "agentic-adapters", "agentic-judge", "agentic-engine"],
        ),
    ];
    for (package, inward) in allowed {
        let names = dependency_names(package);
        let bad: Vec<&String> = names
            .iter()
            .filter(|name| name.starts_with("agentic-") && name.as_str() != package && !inward.contains(&name.as_str()))
            .collect();
        assert!(
            bad.is_empty(),
            "rule: dependencies point inward (see ARCHITECTURE.md); {package} must not depend on {bad:?}"
        );
    }
}

#[test]
fn example_workflows_validate() {
    let dir = project_root().join("examples/workflows");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).expect("examples/workflows exists") {
        let path = entry.expect("readable entry").path();
        if path.extension().is_none_or(|ext| ext != "yaml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("readable example");
        let load = agentic_core::load_workflow(&text, &path.display().to_string());
        let problems: Vec<String> = load.diagnostics.iter().map(ToString::to_string).collect();
        assert!(
            problems.is_empty(),
            "rule: every example validates cleanly (no errors, no warnings):\n{}",
            problems.join("\n")
        );
        assert!(load.workflow.is_some());
        checked += 1;
    }
    assert!(checked >= 3, "expected at least three example workflows, found {checked}");
}

#[test]
fn example_datasets_parse_and_fit_their_workflow() {
    let root = project_root();
    let read = |path: &str| std::fs::read_to_string(root.join(path)).expect("example file exists");
    let workflow = |name: &str| {
        agentic_core::load_workflow(&read(&format!("examples/workflows/{name}.yaml")), name)
            .workflow
            .expect("example workflow validates")
    };
    let code_review = workflow("code_review");
    let dataset =
        agentic_core::dataset::parse_dataset_jsonl(&read("examples/datasets/code_review.jsonl"), "code_review")
            .expect("dataset parses");
    assert_eq!(agentic_core::match_workflow_dataset(code_review.workflow(), &dataset.descriptor), (true, vec![]));
    for sample in &dataset.samples {
        let inputs = agentic_core::adapt_sample_to_workflow_inputs(code_review.workflow(), sample);
        assert_eq!(agentic_core::check_inputs(code_review.workflow(), &inputs), Ok(()), "sample {}", sample.id);
    }
    let bad = agentic_core::dataset::parse_dataset_jsonl(
        &read("examples/datasets/incompatible_for_code_review.jsonl"),
        "incompatible",
    )
    .expect("dataset parses");
    assert_eq!(
        agentic_core::match_workflow_dataset(code_review.workflow(), &bad.descriptor),
        (false, vec!["missing: code".to_owned()])
    );
    let empty =
        agentic_core::dataset::parse_dataset_jsonl(&read("examples/datasets/code_review_empty_code.jsonl"), "e")
            .expect("dataset parses");
    let inputs = agentic_core::adapt_sample_to_workflow_inputs(code_review.workflow(), &empty.samples[0]);
    assert_eq!(
        agentic_core::check_inputs(code_review.workflow(), &inputs),
        Err(vec!["required input `code` is empty".to_owned()])
    );
    let fullstack = workflow("fullstack_generation");
    let dataset =
        agentic_core::dataset::parse_dataset_json(&read("examples/datasets/fullstack_generation.json"), "fullstack")
            .expect("dataset parses");
    assert_eq!(agentic_core::match_workflow_dataset(fullstack.workflow(), &dataset.descriptor), (true, vec![]));
}
