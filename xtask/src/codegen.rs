//! `cargo xtask codegen`: writes the JSON Schemas generated from the Rust types.
//!
//! The schemas are committed so editors and other tools can use them; `--check` (and the
//! `schemas_are_fresh` test) fail when a committed schema no longer matches the types.

use anyhow::{Context, bail};
use serde_json::Value;

/// One generated file: its path under the root and its content.
fn generated() -> Vec<(&'static str, Value)> {
    use agentic_core::document::{document_schema_for, schema_for};
    vec![
        ("docs/schema/workflow.schema.json", document_schema_for::<agentic_core::Workflow>()),
        ("docs/schema/canonical-event.schema.json", schema_for::<agentic_core::CanonicalEvent>()),
        ("docs/schema/workflow-result.schema.json", schema_for::<agentic_core::WorkflowResult>()),
        ("docs/schema/dataset-descriptor.schema.json", schema_for::<agentic_core::DatasetDescriptor>()),
        ("docs/schema/diagnostic.schema.json", schema_for::<agentic_core::Diagnostic>()),
    ]
}

fn render(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(value).expect("schemas serialize");
    text.push('\n');
    text
}

/// Writes the schemas, or with `check` reports the stale ones.
pub(crate) fn run(check: bool) -> anyhow::Result<()> {
    let root = crate::project_root();
    let mut stale = Vec::new();
    for (path, value) in generated() {
        let target = root.join(path);
        let fresh = render(&value);
        let current = std::fs::read_to_string(&target).unwrap_or_default();
        if current == fresh {
            continue;
        }
        if check {
            stale.push(path);
        } else {
            std::fs::create_dir_all(target.parent().expect("schema paths have a parent"))?;
            std::fs::write(&target, fresh).with_context(|| format!("writing `{path}`"))?;
            println!("wrote {path}");
        }
    }
    if !stale.is_empty() {
        bail!("generated files are stale: {}\nrun `cargo xtask codegen` and commit the result", stale.join(", "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn schemas_are_fresh() {
        if let Err(error) = super::run(true) {
            panic!("{error:#}");
        }
    }
}
