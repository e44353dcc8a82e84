//! `agentic evidence git [REPO]`: collect git facts into evidence JSON for `agentic check`.
//!
//! Runs the `git` binary (explicit arguments, `LC_ALL=C`, no prompts) and prints
//! `{"git": {...}}` with `is_repository`, `head`, `current_branch` (null when detached),
//! `detached`, `branches`, `remote_branches`, `tags`, `recent_commits` (sha, parents,
//! is_merge, author, email, date, subject), `dirty` and the `changes` counts (staged,
//! unstaged, untracked). `--merge FILE` adds the sources of other evidence files (for
//! example an issue tracker export) into the same object; `--out FILE` writes it.

use std::path::Path;
use std::process::{Command, ExitCode};

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use serde_json::{Map, Value, json};

#[derive(Debug, Args)]
pub(crate) struct EvidenceArgs {
    #[command(subcommand)]
    source: EvidenceSource,
}

#[derive(Debug, Subcommand)]
enum EvidenceSource {
    /// Branches, current branch, recent commits, tags and dirty state of a git repository.
    Git(GitArgs),
}

#[derive(Debug, Args)]
struct GitArgs {
    /// The repository (default: the current directory).
    #[arg(default_value = ".")]
    repo: String,
    /// How many recent commits to list (at most 2147483647, git's limit).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(0..=i64::from(i32::MAX)))]
    max_commits: u32,
    /// Other evidence JSON files whose sources are merged into the output.
    #[arg(long)]
    merge: Vec<String>,
    /// Write the evidence here instead of stdout.
    #[arg(long)]
    out: Option<String>,
}

pub(crate) fn run(args: EvidenceArgs) -> anyhow::Result<ExitCode> {
    match args.source {
        EvidenceSource::Git(git) => run_git(git),
    }
}

fn run_git(args: GitArgs) -> anyhow::Result<ExitCode> {
    let repo = Path::new(&args.repo);
    match std::fs::metadata(repo) {
        Ok(metadata) if metadata.is_dir() => {}
        Ok(_) => bail!("`{}` is not a directory; pass the path of a git repository", args.repo),
        Err(error) => bail!("cannot read `{}`: {error}; pass the path of a git repository", args.repo),
    }
    let mut evidence = Map::new();
    for path in &args.merge {
        let text = super::check::read_text(path, "the --merge file")?;
        // Strict: a repeated key would silently keep only one of its values.
        let value: Value = agentic_core::json_strict::from_str_lenient_surrogates(&text).map_err(|error| {
            let advice = super::check::json_advice(&text, &error);
            anyhow::Error::new(error).context(format!("`{path}` is not valid JSON{advice}"))
        })?;
        let Value::Object(object) = value else { bail!("`{path}` must hold a JSON object of evidence sources") };
        if object.contains_key("git") {
            say_err!("warning: `{path}` has a `git` source; the one collected now replaces it");
        }
        evidence.extend(object);
    }
    evidence.insert("git".to_owned(), collect_git(repo, args.max_commits)?);
    let mut text = serde_json::to_string_pretty(&Value::Object(evidence))?;
    text.push('\n');
    match &args.out {
        Some(path) => super::write_output(path, text.as_bytes())?,
        None => stdout_text!("{text}")?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `git -C repo ARGS`; `Ok(None)` when git exits non-zero.
/// Runs git in `repo`: its output, or `None` when it fails (for the questions whose failure
/// is an answer: no `HEAD` yet, a detached `HEAD`).
fn git(repo: &Path, args: &[&str]) -> anyhow::Result<Option<String>> {
    let output = git_output(repo, args)?;
    Ok(output.status.success().then(|| git_text(&output.stdout, args)))
}

/// Git's output as text: bytes that are not UTF-8 (a ref name, or a commit message written in
/// another encoding without saying so) read as U+FFFD, and stderr says so, since an assertion
/// on such a name or message then compares against the replaced text.
fn git_text(stdout: &[u8], args: &[&str]) -> String {
    match std::str::from_utf8(stdout) {
        Ok(text) => text.to_owned(),
        Err(_) => {
            say_err!(
                "warning: `git {}` printed text that is not UTF-8 (a ref or file name, or a commit message in \
                 another encoding): those bytes read as U+FFFD in the evidence, so an assertion on such a name \
                 must write U+FFFD too (or rename the ref or file to UTF-8)",
                args.join(" ")
            );
            String::from_utf8_lossy(stdout).into_owned()
        }
    }
}

/// Runs git in `repo` where a failure means the facts cannot be collected (a damaged
/// repository, a git too old): an error that quotes git, so that no partial evidence is written.
fn git_required(repo: &Path, args: &[&str]) -> anyhow::Result<String> {
    let output = git_output(repo, args)?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        bail!(
            "`git {}` failed in `{}` ({}): {}; fix the repository (try `git fsck`) or upgrade git, then run again",
            args.join(" "),
            repo.display(),
            output.status,
            stderr.trim()
        );
    }
    Ok(git_text(&output.stdout, args))
}

/// Variables that point git at another repository than the path given (a git hook sets
/// `GIT_DIR`): cleared for every call.
const REPOSITORY_VARIABLES: [&str; 8] = [
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
];

fn git_output(repo: &Path, args: &[&str]) -> anyhow::Result<std::process::Output> {
    let mut command = Command::new("git");
    command
        .arg("-C")
        .arg(repo)
        .args(args)
        .env("LC_ALL", "C")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0");
    for variable in REPOSITORY_VARIABLES {
        command.env_remove(variable);
    }
    command.output().context("cannot run `git`; install git or put it on PATH")
}

fn lines(text: String) -> Vec<Value> {
    text.lines().filter(|l| !l.is_empty()).map(|l| Value::String(l.to_owned())).collect()
}

fn collect_git(repo: &Path, max_commits: u32) -> anyhow::Result<Value> {
    let inside = git_output(repo, &["rev-parse", "--is-inside-work-tree"])?;
    if !inside.status.success() {
        // git's own reason: not a repository, or one owned by another user (`safe.directory`).
        let stderr = String::from_utf8_lossy(&inside.stderr);
        // git's message may end in a command to copy: what to do goes on a line of its own.
        bail!(
            "git cannot read `{}` as a repository:\n{}\n(pass the path of a git work tree; for a repository owned by \
             another user, git says above which `safe.directory` to add)",
            repo.display(),
            stderr.trim()
        );
    }
    if String::from_utf8_lossy(&inside.stdout).trim() != "true" {
        bail!(
            "`{}` is not inside a git work tree (a bare repository or a `.git` directory); pass the path of a clone \
             or a worktree",
            repo.display()
        );
    }
    // A shallow clone (CI checkouts often are) has no history past its boundary: commits
    // there show no parents and the list stops early, so the facts say so.
    let shallow = git(repo, &["rev-parse", "--is-shallow-repository"])?.is_some_and(|text| text.trim() == "true");
    if shallow {
        say_err!(
            "warning: `{}` is a shallow clone: `recent_commits` stops at its boundary and commits there show no \
             parents (so no merge); `git.shallow` is true. Fetch the history (`git fetch --unshallow`, or \
             `fetch-depth: 0` in CI) for facts about it",
            repo.display()
        );
    }
    let head = git(repo, &["rev-parse", "--verify", "--quiet", "HEAD"])?.map(|s| s.trim().to_owned());
    // Names are the refs without their `refs/heads/`, `refs/remotes/` or `refs/tags/` prefix
    // (`lstrip=2`), never git's short form, which turns a branch named like a tag (or a local
    // branch named `origin/main`) into `heads/v1`.
    let current_branch = git(repo, &["symbolic-ref", "--quiet", "HEAD"])?
        .and_then(|s| s.trim().strip_prefix("refs/heads/").map(str::to_owned));
    let branches = lines(git_required(repo, &["for-each-ref", "--format=%(refname:lstrip=2)", "refs/heads"])?);
    // A remote's `HEAD` (`origin/HEAD`) is a symbolic ref to one of its branches, not a
    // branch: it prints as an empty line, which `lines` drops.
    let remote_branches = lines(git_required(
        repo,
        &["for-each-ref", "--format=%(if)%(symref)%(then)%(else)%(refname:lstrip=2)%(end)", "refs/remotes"],
    )?);
    let tags = lines(git_required(repo, &["for-each-ref", "--format=%(refname:lstrip=2)", "refs/tags"])?);
    let mut commits = Vec::new();
    if head.is_some() {
        let limit = format!("-n{max_commits}");
        // NUL between fields and after each commit (`-z`): git refuses NUL in names and
        // messages, while any other byte (a \x1e or \x1f too) may be in them. No signature
        // check (`log.showSignature` would print it among the fields).
        let log = git_required(
            repo,
            // UTF-8 whatever `i18n.logOutputEncoding` says (a Latin-1 setting would garble
            // every name and subject into U+FFFD); commits recorded in another encoding are
            // re-encoded.
            &[
                "log",
                "-z",
                "--no-show-signature",
                "--encoding=UTF-8",
                &limit,
                "--format=%H%x00%P%x00%an%x00%ae%x00%aI%x00%s",
            ],
        )?;
        let mut fields: Vec<&str> = log.split('\0').collect();
        if fields.last() == Some(&"") {
            fields.pop();
        }
        let is_sha = |text: &str| matches!(text.len(), 40 | 64) && text.bytes().all(|b| b.is_ascii_hexdigit());
        for record in fields.chunks(6) {
            let [sha, parents, author, email, date, subject] = record else {
                bail!(
                    "`git log` in `{}` printed a commit that cannot be read (fields {record:?}); \
                     check that `git log -z --format=%H` works there, or upgrade git",
                    repo.display()
                );
            };
            let parents: Vec<&str> = parents.split_whitespace().collect();
            if !is_sha(sha) || !parents.iter().all(|p| is_sha(p)) {
                bail!(
                    "`git log` in `{}` printed a commit that cannot be read (`{sha}` is not a commit id); \
                     check that `git log -z --format=%H` works there, or upgrade git",
                    repo.display()
                );
            }
            commits.push(json!({
                "sha": sha,
                "parents": parents,
                "is_merge": parents.len() > 1,
                "author": author,
                "email": email,
                "date": date,
                "subject": subject,
            }));
        }
    }
    // Renames detected whatever `status.renames` or a rename limit says, so the counts are the same on every
    // machine (a rename is one change, not a deletion and an addition).
    // (`status.renameLimit` 0: no limit, as a lower one turns renames back into pairs.)
    let status = git_required(
        repo,
        &["-c", "status.renameLimit=0", "status", "--porcelain=v1", "-z", "--untracked-files=all", "--renames"],
    )?;
    let (mut staged, mut unstaged, mut untracked) = (0u64, 0u64, 0u64);
    let mut entries = status.split('\0').filter(|e| !e.is_empty());
    while let Some(entry) = entries.next() {
        let bytes = entry.as_bytes();
        if bytes.len() < 3 {
            continue;
        }
        let (index, worktree) = (bytes[0], bytes[1]);
        if index == b'?' {
            untracked += 1;
            continue;
        }
        if index != b' ' {
            staged += 1;
        }
        if worktree != b' ' {
            unstaged += 1;
        }
        if matches!(index, b'R' | b'C') || matches!(worktree, b'R' | b'C') {
            // Renames and copies (staged, or in the work tree: `git add -N` after `mv`) are
            // followed by the original path.
            entries.next();
        }
    }
    Ok(json!({
        "is_repository": true,
        "shallow": shallow,
        "head": head,
        "current_branch": current_branch,
        "detached": head.is_some() && current_branch.is_none(),
        "branches": branches,
        "remote_branches": remote_branches,
        "tags": tags,
        "recent_commits": commits,
        "dirty": staged + unstaged + untracked > 0,
        "changes": {"staged": staged, "unstaged": unstaged, "untracked": untracked},
    }))
}
