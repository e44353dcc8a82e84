//! Every file in `test_data/workflows/ok` loads with no diagnostic at all; every file in
//! `test_data/workflows/err` fails, and its diagnostics match the snapshot beside the test.
//! Update snapshots with `cargo insta review` (never by hand).

use std::path::{Path, PathBuf};

fn fixtures(kind: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("test_data/workflows").join(kind);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixture directory exists")
        .map(|entry| entry.expect("readable entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    files
}

fn render(path: &Path) -> (String, bool) {
    let text = std::fs::read_to_string(path).expect("fixture is readable");
    let name = format!("{}", path.file_name().unwrap().to_string_lossy());
    let load = agentic_core::load_workflow(&text, &name);
    let lines: Vec<String> = load.diagnostics.iter().map(ToString::to_string).collect();
    (lines.join("\n"), load.workflow.is_some())
}

#[test]
fn ok_fixtures_load_cleanly() {
    let files = fixtures("ok");
    assert!(!files.is_empty());
    for path in files {
        let (diagnostics, loaded) = render(&path);
        assert!(loaded && diagnostics.is_empty(), "{}:\n{diagnostics}", path.display());
    }
}

#[test]
fn err_fixtures_report_every_problem() {
    let files = fixtures("err");
    assert!(files.len() >= 10);
    for path in files {
        let (diagnostics, loaded) = render(&path);
        assert!(!loaded, "{} should not load", path.display());
        assert!(diagnostics.contains("error["), "{} has no error", path.display());
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        insta::assert_snapshot!(name, diagnostics);
    }
}

#[test]
fn oversize_file_is_rejected_with_a_diagnostic() {
    let mut text = String::from("name: big\nsteps:\n");
    while text.len() <= 4 * 1024 * 1024 {
        text.push_str(
            "  - {name: s, kind: command, argv: [echo, \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"]}\n",
        );
    }
    let load = agentic_core::load_workflow(&text, "big.yaml");
    assert!(load.workflow.is_none());
    assert_eq!(load.diagnostics[0].code, "yaml-too-large");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

    /// Loading never panics, whatever the text.
    #[test]
    fn load_never_panics_on_arbitrary_text(text in ".{0,200}") {
        let _ = agentic_core::load_workflow(&text, "fuzz.yaml");
    }

    /// Loading never panics on text shaped like a workflow with random pieces.
    #[test]
    fn load_never_panics_on_workflow_like_text(
        name in "[a-z]{0,5}",
        kind in "(agent|tool|command|x)",
        dep in "[a-z]{0,3}",
        arg in "[$@{}a-z.\\[\\]'?0-9 ]{0,24}",
    ) {
        let text = format!("name: {name}\nsteps:\n  - name: {name}\n    kind: {kind}\n    depends_on: [{dep}]\n    argv: [\"{arg}\"]\n    prompt: \"{arg}\"\n    when: \"{arg}\"\noutputs:\n  o: {{from: \"{arg}\"}}\n");
        let _ = agentic_core::load_workflow(&text, "fuzz.yaml");
    }
}
