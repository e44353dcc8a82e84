//! `agentic lint`: exit codes, the text and JSON formats, and the bundled examples.

use crate::agentic;

fn run(args: &[&str]) -> (i32, String, String) {
    let output = agentic().arg("lint").args(args).output().expect("agentic runs");
    (
        output.status.code().expect("exited normally"),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The text of the feature-workflow example spec, which lint tests edit.
fn feature_workflow_spec() -> String {
    std::fs::read_to_string(crate::project_root().join("examples/checkpoints/feature-workflow.yaml")).unwrap()
}

#[test]
fn bundled_example_workflows_lint_clean() {
    let mut files: Vec<String> = std::fs::read_dir(crate::project_root().join("examples/workflows"))
        .expect("examples exist")
        .map(|entry| format!("examples/workflows/{}", entry.unwrap().file_name().to_string_lossy()))
        .filter(|name| name.ends_with(".yaml"))
        .collect();
    files.sort();
    let args: Vec<&str> = files.iter().map(String::as_str).collect();
    let (code, stdout, stderr) = run(&args);
    assert_eq!(code, 0, "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.is_empty(), "no diagnostics expected, got:\n{stdout}");
}

#[test]
fn broken_workflow_exits_1_and_names_file_line_and_problem() {
    let (code, stdout, _) = run(&["crates/agentic-core/test_data/workflows/err/cycle_two.yaml"]);
    assert_eq!(code, 1);
    assert!(
        stdout.starts_with("crates/agentic-core/test_data/workflows/err/cycle_two.yaml:3:11: error[dependency-cycle]: dependency cycle: a -> b -> a"),
        "{stdout}"
    );
    assert!(stdout.contains("\n  hint: "), "{stdout}");
}

#[test]
fn unknown_reference_names_the_missing_step() {
    let (code, stdout, _) = run(&["crates/agentic-core/test_data/workflows/err/unknown_references.yaml"]);
    assert_eq!(code, 1);
    assert!(
        stdout.contains(
            ":10:13: error[unknown-reference]: `${steps.parser.outputs.stdout}` refers to unknown step `parser`"
        ),
        "{stdout}"
    );
}

#[test]
fn unreadable_file_exits_2() {
    let (code, _, stderr) = run(&["examples/workflows/hello_command.yaml", "does/not/exist.yaml"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("does/not/exist.yaml: error[unreadable]: cannot read file"), "{stderr}");
}

#[test]
fn json_format_is_machine_readable() {
    let (code, stdout, _) =
        run(&["--format", "json", "crates/agentic-core/test_data/workflows/err/duplicate_step.yaml"]);
    assert_eq!(code, 1);
    let document: serde_json::Value = serde_json::from_str(&stdout).expect("valid JSON");
    let diagnostic = &document["files"][0]["diagnostics"][0];
    assert_eq!(diagnostic["code"], "duplicate-step");
    assert_eq!(diagnostic["position"]["line"], 6);
    assert_eq!(diagnostic["severity"], "error");
    assert_eq!(document["summary"]["errors"], 1);
}

#[test]
fn warnings_alone_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("warn.yaml");
    std::fs::write(
        &path,
        "name: w\ninputs:\n  unused: {type: string}\nsteps:\n  - {name: a, kind: command, argv: [\"true\"]}\n",
    )
    .unwrap();
    let (code, stdout, _) = run(&[path.to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("warning[unused-input]"), "{stdout}");
}

#[test]
fn evaluation_problems_are_reported_once_where_they_were_written() {
    // Core and the scoring engine both check weights; the problem is listed once. A criterion
    // merged with a profile's is reported at its own inline entry (line 10), not elsewhere.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wf.yaml");
    std::fs::write(
        &path,
        "name: wf\nsteps:\n  - name: a\n    kind: command\n    argv: [echo, hi]\nevaluation:\n  scoring_profile: B\n  criteria:\n    - {name: x, weight: -1, formula_id: zero_one, score_from: metric.retries}\n    - name: efficiency\n      formula_id: lower_is_better\n",
    )
    .unwrap();
    let shown = path.display().to_string();
    let (code, stdout, _) = run(&[&shown]);
    assert_eq!(code, 1);
    assert_eq!(stdout.matches("error[invalid-weight]").count(), 1, "{stdout}");
    assert!(stdout.contains(&format!("{shown}:9:")), "{stdout}");
    assert!(stdout.contains(&format!("{shown}:10:7: error[invalid-params]: criterion `efficiency`")), "{stdout}");
}

/// An empty file says nothing of its kind: lint does not call it a workflow. With
/// `--previous` it can only be a checkpoint spec.
#[test]
fn an_empty_file_is_not_assumed_to_be_a_workflow() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.yaml");
    std::fs::write(&empty, "# nothing yet\n").unwrap();
    let (code, stdout, _) = run(&[empty.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(stdout.contains(":1:1: error[empty-document]: the file is empty"), "{stdout}");
    assert!(!stdout.contains("workflow file"), "{stdout}");
    let previous = crate::project_root().join("examples/checkpoints/feature-workflow.yaml");
    let (code, stdout, _) = run(&[empty.to_str().unwrap(), "--previous", previous.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(stdout.contains("the checkpoint spec file is empty"), "{stdout}");
}

/// A schema error elsewhere in the new spec does not hide a removed id; an error at an id
/// holds the comparison back, and says so.
/// A spec whose top-level keys are misspelt (`Checkpoints:`, `checkpoint:`) is still linted
/// as a spec, so the errors suggest the right keys instead of a workflow's.
#[test]
fn a_spec_with_misspelt_top_level_keys_is_linted_as_a_spec() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text, expected) in [
        ("capital.yaml", "Workflow: w\nSpec_version: \"1\"\nCheckpoints: []\n", "did you mean `checkpoints`?"),
        ("singular.yaml", "workflow: w\nspec_version: \"1\"\ncheckpoint: []\n", "did you mean `checkpoints`?"),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let (code, stdout, stderr) = run(&[path.to_str().unwrap()]);
        assert_eq!(code, 1, "{stdout}{stderr}");
        assert!(stdout.contains(expected), "{name}: {stdout}");
        assert!(stdout.contains("in the checkpoint spec") && !stdout.contains("in the workflow"), "{name}: {stdout}");
    }
}

#[test]
fn a_schema_error_does_not_hide_a_removed_id() {
    let dir = tempfile::tempdir().unwrap();
    let example = feature_workflow_spec();
    let old = dir.path().join("old.yaml");
    std::fs::write(&old, &example).unwrap();
    // P1-02 removed (its block runs to the next checkpoint), and a severity misspelt.
    let start = example.find("  - id: P1-02").unwrap();
    let end = start + example[start + 1..].find("  - id: ").unwrap() + 1;
    let new_text =
        format!("{}{}", &example[..start], &example[end..]).replacen("severity: high", "severity: urgent", 1);
    assert!(new_text.contains("severity: urgent") && !new_text.contains("id: P1-02"));
    let new = dir.path().join("new.yaml");
    std::fs::write(&new, &new_text).unwrap();
    let (code, stdout, stderr) = run(&[new.to_str().unwrap(), "--previous", old.to_str().unwrap()]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stdout.contains("error[invalid-value]") && stdout.contains("\"urgent\""), "{stdout}");
    assert!(stdout.contains("error[id-removed]: checkpoint `P1-02` was removed"), "{stdout}");
    // An id of the wrong type cannot be compared: said, not guessed.
    let bad_id = example.replacen("id: P1-02", "id: [P1-02]", 1);
    std::fs::write(&new, bad_id).unwrap();
    let (code, stdout, stderr) = run(&[new.to_str().unwrap(), "--previous", old.to_str().unwrap()]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stdout.contains("warning[previous-not-compared]"), "{stdout}");
    // ... at the spec it is about, not at a placeholder.
    assert!(stdout.contains(&format!("{}:1:1: warning[previous-not-compared]", new.display())), "{stdout}");
    assert!(!stdout.contains("<input>"), "{stdout}");
    assert!(!stdout.contains("id-removed"), "{stdout}");
}

/// `--previous` reads the previous spec as `check` and `lint` read any spec: `x-` keys (a
/// home for anchors) and whole numbers written with a fraction are fine there too.
#[test]
fn a_previous_spec_reads_like_any_spec() {
    let dir = tempfile::tempdir().unwrap();
    let example = feature_workflow_spec();
    let written = format!("x-notes: &note \"shared\"\n{}", example.replacen("tier: 1", "tier: 1.0", 1));
    let path = dir.path().join("spec.yaml");
    std::fs::write(&path, &written).unwrap();
    let (code, stdout, stderr) = run(&[path.to_str().unwrap(), "--previous", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    // A previous spec that does not read says why.
    let broken = dir.path().join("old.yaml");
    std::fs::write(&broken, example.replacen("tier: 1", "tier: nine", 1)).unwrap();
    let (code, _, stderr) = run(&[path.to_str().unwrap(), "--previous", broken.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("is not a valid checkpoint spec: "), "{stderr}");
    assert!(stderr.contains(&format!("{}: error[previous-invalid]: previous spec", broken.display())), "{stderr}");
    assert!(stderr.contains("2 file(s) checked: 0 error(s), 0 warning(s), 1 invalid previous spec"), "{stderr}");
    let (_, stdout, _) = run(&[path.to_str().unwrap(), "--previous", broken.to_str().unwrap(), "--format", "json"]);
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(json["files"][1]["read_error_code"], "previous-invalid", "{stdout}");
    assert_eq!(json["files"][0]["read_error_code"], serde_json::Value::Null, "{stdout}");
    assert!(!stderr.contains("unreadable"), "{stderr}");
    // An error elsewhere than at an id, tier or instruction (`severity: urgent`) does not hold
    // the comparison back: the previous spec is history. It is said, and ids are compared.
    let urgent = dir.path().join("urgent.yaml");
    let old_text = example.replacen("severity: high", "severity: urgent", 1);
    let start = old_text.find("  - id: P1-02").unwrap();
    let end = start + old_text[start + 1..].find("  - id: ").unwrap() + 1;
    let new_text =
        format!("{}{}", &old_text[..start], &old_text[end..]).replacen("severity: urgent", "severity: high", 1);
    std::fs::write(&urgent, &old_text).unwrap();
    std::fs::write(&path, &new_text).unwrap();
    let (code, stdout, stderr) = run(&[path.to_str().unwrap(), "--previous", urgent.to_str().unwrap()]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stdout.contains("warning[previous-has-errors]") && stdout.contains("\"urgent\""), "{stdout}");
    assert!(stdout.contains("error[id-removed]: checkpoint `P1-02` was removed"), "{stdout}");
    // An error at an id keeps the ids from being compared, and it is the one quoted, not the
    // first error of the file; so does an empty id.
    let at_id = old_text.replacen("id: P2-01", "id: [P2-01]", 1);
    std::fs::write(&urgent, &at_id).unwrap();
    let (code, _, stderr) = run(&[path.to_str().unwrap(), "--previous", urgent.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("`id` must be a string") && !stderr.contains("\"urgent\""), "{stderr}");
    // So does an error placed at an id whose value still reads: a tag that does not fit it,
    // or an id written twice in one checkpoint (which one was meant is not certain). An
    // unknown tag elsewhere is history like `severity: urgent`.
    for (at_id, quoted) in [
        (example.replacen("id: P2-01", "id: !!int P2-01", 1), "`!!int P2-01`"),
        (example.replacen("id: P2-01", "id: !ticket P2-01", 1), "the tag `!ticket`"),
        (example.replacen("workflow: ", "workflow: !!bool ", 1), "`!!bool "),
        (example.replacen("  - id: P2-01\n", "  - id: P2-01\n    id: P2-09\n", 1), "key `id` appears twice"),
    ] {
        std::fs::write(&urgent, &at_id).unwrap();
        let (code, _, stderr) = run(&[path.to_str().unwrap(), "--previous", urgent.to_str().unwrap()]);
        assert_eq!(code, 2, "{quoted}: {stderr}");
        assert!(stderr.contains("error[previous-invalid]") && stderr.contains(quoted), "{quoted}: {stderr}");
    }
    std::fs::write(&urgent, old_text.replacen("severity: urgent", "severity: !level high", 1)).unwrap();
    let (code, stdout, stderr) = run(&[path.to_str().unwrap(), "--previous", urgent.to_str().unwrap()]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stdout.contains("warning[previous-has-errors]") && stdout.contains("`!level`"), "{stdout}");
    std::fs::write(&urgent, example.replacen("id: P2-01", "id: \"\"", 1)).unwrap();
    let (code, _, stderr) = run(&[path.to_str().unwrap(), "--previous", urgent.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("has a checkpoint with an empty id"), "{stderr}");
    std::fs::write(&path, &written).unwrap();
    let missing = dir.path().join("missing.yaml");
    let (code, _, stderr) = run(&[path.to_str().unwrap(), "--previous", missing.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("2 file(s) checked: 0 error(s), 0 warning(s), 1 unreadable"), "{stderr}");
    // Nor can one that uses an id twice: versions are compared by id.
    let twice = dir.path().join("twice.yaml");
    std::fs::write(&twice, example.replacen("id: P1-02", "id: P1-01", 1)).unwrap();
    let (code, _, stderr) = run(&[path.to_str().unwrap(), "--previous", twice.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("uses checkpoint id `P1-01` twice, so it cannot be compared by id"), "{stderr}");
    assert!(!stderr.contains("now means something else"), "{stderr}");
}

/// A number field of a few values says them in its hint (`tier` takes 1 to 3), not a number
/// such as `30`.
#[test]
fn a_tier_that_is_no_number_is_told_its_range() {
    let dir = tempfile::tempdir().unwrap();
    let example = feature_workflow_spec();
    let path = dir.path().join("spec.yaml");
    std::fs::write(&path, example.replacen("tier: 1", "tier: yes", 1)).unwrap();
    let (code, stdout, stderr) = run(&[path.to_str().unwrap()]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stdout.contains("hint: write a whole number from 1 to 3, without quotes or units"), "{stdout}");
}

/// A spec that repeats a key is still linted as a spec, with all of its problems: the
/// repeated key does not make it look like a workflow, nor hide the rest.
#[test]
fn a_repeated_key_is_reported_with_the_rest_of_a_specs_problems() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    std::fs::write(
        &spec,
        "workflow: w\nspec_version: \"1\"\ncheckpoints:\n  - id: P1-01\n    tier: 2\n    instruction: x\n    severity: low\n    severity: high\n    verification: {method: api_state, evidence_sources: [trace_file], asert: {}}\n",
    )
    .unwrap();
    let (code, stdout, stderr) = run(&[spec.to_str().unwrap()]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    for expected in
        ["8:5: error[duplicate-key]", "error[tier-method-mismatch]", "error[unknown-key]: unknown key `asert`"]
    {
        assert!(stdout.contains(expected), "{expected}: {stdout}");
    }
    assert!(!stdout.contains("in the workflow"), "{stdout}");
}
