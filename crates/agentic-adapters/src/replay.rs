//! The `replay` provider: answers model requests from recorded exchanges (cassettes), so
//! workflows with agent steps run offline and deterministically; and [`RecordingProvider`],
//! which writes cassettes while a real provider answers.
//!
//! A cassette is a JSONL file (one exchange per line) or a JSON array of exchanges:
//!
//! ```json
//! {"key": "9f1c…", "caller": "review", "request": {"model": "…", "messages": […]}, "response": {"content": "…", "model": "…"}}
//! ```
//!
//! `key` is [`request_key`] of `request`: a stable hash (FNV-1a, 128 bits) of the request's
//! canonical JSON (model, messages and parameters), independent of the caller. It may be
//! left out of hand-written entries; when present it must match the request, so an edited
//! request with a stale key is reported instead of silently never matching. Requests with
//! the same key are answered in recorded order, the last answer repeating.

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::provider::{ChatRequest, ChatResponse, ModelProvider, ProviderError, Role};

/// One recorded exchange.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CassetteEntry {
    /// [`request_key`] of `request`; computed when absent.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key: String,
    /// Who asked: a step name or `judge:<criterion>`. Informational; not part of the key.
    #[serde(default)]
    pub caller: String,
    /// The request as sent.
    pub request: ChatRequest,
    /// The answer.
    pub response: ChatResponse,
}

/// Why a cassette could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CassetteError {
    /// The file could not be read.
    #[error("cannot read cassette `{path}`: {message}")]
    Read {
        /// The file.
        path: String,
        /// The OS error.
        message: String,
    },
    /// A line (or the JSON document) is not a valid exchange.
    #[error("cassette `{path}` line {line}: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// 1-based line.
        line: usize,
        /// What is wrong and what an entry looks like.
        message: String,
    },
    /// An entry's `key` does not match its request.
    #[error(
        "cassette `{path}` line {line}: `key` {key} does not match the request (its key is {actual}); the request was edited after recording: remove `key` or record again"
    )]
    StaleKey {
        /// The file.
        path: String,
        /// 1-based line.
        line: usize,
        /// The key written.
        key: String,
        /// The key of the request as written.
        actual: String,
    },
}

/// The stable key of a request: FNV-1a (128-bit) of its canonical JSON, as 32 hex digits.
pub fn request_key(request: &ChatRequest) -> String {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013b;
    let text = serde_json::to_string(request).unwrap_or_default();
    let mut hash = OFFSET;
    for byte in text.as_bytes() {
        hash ^= u128::from(*byte);
        hash = hash.wrapping_mul(PRIME);
    }
    format!("{hash:032x}")
}

/// Reads a cassette (JSONL, or a JSON array) and checks every key.
pub fn load_cassette(path: &Path) -> Result<Vec<CassetteEntry>, CassetteError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|error| CassetteError::Read { path: shown.clone(), message: error.to_string() })?;
    parse_cassette(&text, &shown)
}

/// Parses cassette text; `path` only labels errors.
pub fn parse_cassette(text: &str, path: &str) -> Result<Vec<CassetteEntry>, CassetteError> {
    const SHAPE: &str =
        "each exchange is {\"caller\", \"request\": {\"model\", \"messages\"}, \"response\": {\"content\", \"model\"}}";
    let mut entries: Vec<(usize, CassetteEntry)> = Vec::new();
    if text.trim_start().starts_with('[') {
        let parsed: Vec<CassetteEntry> = serde_json::from_str(text).map_err(|error| CassetteError::Invalid {
            path: path.to_owned(),
            line: error.line(),
            message: format!("{error}; {SHAPE}"),
        })?;
        entries.extend(parsed.into_iter().enumerate().map(|(idx, entry)| (idx + 1, entry)));
    } else {
        for (idx, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let entry: CassetteEntry = serde_json::from_str(line).map_err(|error| CassetteError::Invalid {
                path: path.to_owned(),
                line: idx + 1,
                message: format!("{error}; {SHAPE}"),
            })?;
            entries.push((idx + 1, entry));
        }
    }
    entries
        .into_iter()
        .map(|(line, mut entry)| {
            let actual = request_key(&entry.request);
            if entry.key.is_empty() {
                entry.key = actual;
            } else if entry.key != actual {
                return Err(CassetteError::StaleKey { path: path.to_owned(), line, key: entry.key, actual });
            }
            Ok(entry)
        })
        .collect()
}

/// A provider that answers from a cassette and fails loudly on a request it has not seen.
#[derive(Debug)]
pub struct ReplayProvider {
    path: String,
    entries: Vec<CassetteEntry>,
    by_key: HashMap<String, Vec<usize>>,
    /// How many times each request (by caller, when callers are strict, and key) was served.
    served: Mutex<HashMap<(String, String), usize>>,
    /// Whether a recorded exchange answers only its own caller (see
    /// [`ReplayProvider::with_strict_callers`]).
    strict_callers: bool,
}

impl ReplayProvider {
    /// Loads the cassette at `path`.
    pub fn load(path: &Path) -> Result<ReplayProvider, CassetteError> {
        Ok(ReplayProvider::from_entries(path.display().to_string(), load_cassette(path)?))
    }

    /// A provider over `entries`; `label` names the cassette in errors.
    pub fn from_entries(label: String, entries: Vec<CassetteEntry>) -> ReplayProvider {
        let mut by_key: HashMap<String, Vec<usize>> = HashMap::new();
        for (idx, entry) in entries.iter().enumerate() {
            by_key.entry(entry.key.clone()).or_default().push(idx);
        }
        ReplayProvider { path: label, entries, by_key, served: Mutex::new(HashMap::new()), strict_callers: false }
    }

    /// Answers a request only from exchanges recorded for the same caller. By default the
    /// caller does not matter (a renamed workflow step replays its recording); a caller that
    /// names what the request alone does not show (the tier-3 judge puts its name, version,
    /// provider and structured-output mode there) makes a change of it a miss.
    pub fn with_strict_callers(mut self) -> ReplayProvider {
        self.strict_callers = true;
        self
    }

    /// The recorded exchanges.
    pub fn entries(&self) -> &[CassetteEntry] {
        &self.entries
    }

    /// Explains a miss: how the closest recorded request of the same caller differs.
    fn explain_miss(&self, caller: &str, request: &ChatRequest) -> String {
        let same_caller: Vec<&CassetteEntry> = self.entries.iter().filter(|entry| entry.caller == caller).collect();
        let Some(recorded) = same_caller.first() else {
            let callers: Vec<&str> = {
                let mut callers: Vec<&str> = self.entries.iter().map(|entry| entry.caller.as_str()).collect();
                callers.sort_unstable();
                callers.dedup();
                callers
            };
            return format!(
                "nothing is recorded for `{caller}` (the cassette has {} exchange(s), for: {})",
                self.entries.len(),
                if callers.is_empty() { "nobody".to_owned() } else { callers.join(", ") }
            );
        };
        let recorded = &recorded.request;
        let difference = if recorded.model != request.model {
            format!("model: recorded `{}`, asked `{}`", recorded.model, request.model)
        } else if recorded.messages.len() != request.messages.len() {
            format!("message count: recorded {}, asked {}", recorded.messages.len(), request.messages.len())
        } else if let Some((idx, (old, new))) = recorded
            .messages
            .iter()
            .zip(&request.messages)
            .enumerate()
            .find(|(_, (old, new))| old.content != new.content || old.role != new.role)
        {
            let at = old.content.chars().zip(new.content.chars()).take_while(|(a, b)| a == b).count();
            let excerpt = |text: &str| text.chars().skip(at.saturating_sub(20)).take(60).collect::<String>();
            let role = match new.role {
                Role::System => "system",
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            format!(
                "{role} message {idx}, at character {at}: recorded `…{}…`, asked `…{}…`",
                excerpt(&old.content),
                excerpt(&new.content)
            )
        } else {
            fn show<T: std::fmt::Display>(value: &Option<T>) -> String {
                value.as_ref().map_or_else(|| "none".to_owned(), ToString::to_string)
            }
            let differing: Vec<String> = [
                ("temperature", show(&recorded.temperature), show(&request.temperature)),
                ("max_tokens", show(&recorded.max_tokens), show(&request.max_tokens)),
                ("seed", show(&recorded.seed), show(&request.seed)),
                (
                    "response_schema",
                    recorded.response_schema.as_ref().map_or("none".to_owned(), |_| "a schema".to_owned()),
                    request.response_schema.as_ref().map_or("none".to_owned(), |_| "a schema".to_owned()),
                ),
            ]
            .into_iter()
            .filter(|(name, old, new)| {
                old != new || (*name == "response_schema" && recorded.response_schema != request.response_schema)
            })
            .map(|(name, old, new)| {
                if old == new {
                    format!("{name} (another schema)")
                } else {
                    format!("{name}: recorded {old}, asked {new}")
                }
            })
            .collect();
            match differing.as_slice() {
                [] => "nothing but the order of requests".to_owned(),
                // Only the seed: a run the recording did not make (each `--eval-runs` run and
                // each golden case asks with a seed of its own), or another configured seed.
                [only] if only.starts_with("seed:") => format!(
                    "{only} (the same request with another seed: a run the recording did not make, such as a \
                     further `--eval-runs` run, or a configuration whose `seed` is not the recording's)"
                ),
                _ => differing.join("; "),
            }
        };
        format!("{} exchange(s) recorded for `{caller}`; the first of them differs in {difference}", same_caller.len())
    }
}

#[async_trait]
impl ModelProvider for ReplayProvider {
    fn name(&self) -> &str {
        "replay"
    }

    async fn chat(&self, caller: &str, request: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        let key = request_key(request);
        let indices: Vec<usize> = self
            .by_key
            .get(&key)
            .into_iter()
            .flatten()
            .copied()
            .filter(|&idx| !self.strict_callers || self.entries[idx].caller == caller)
            .collect();
        if indices.is_empty() {
            return Err(ProviderError::ReplayMiss {
                step: caller.to_owned(),
                key,
                cassette: format!("`{}` ({})", self.path, self.explain_miss(caller, request)),
            });
        }
        let position = {
            let mut served = self.served.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let by = if self.strict_callers { caller.to_owned() } else { String::new() };
            let count = served.entry((by, key)).or_insert(0);
            let position = (*count).min(indices.len() - 1);
            *count += 1;
            position
        };
        Ok(self.entries[indices[position]].response.clone())
    }
}

/// Wraps a real provider and appends every successful exchange to a cassette file.
pub struct RecordingProvider {
    inner: Arc<dyn ModelProvider>,
    path: PathBuf,
    file: Mutex<std::fs::File>,
}

impl RecordingProvider {
    /// Records `inner`'s exchanges into `path` (created, or appended to).
    pub fn new(inner: Arc<dyn ModelProvider>, path: &Path) -> Result<RecordingProvider, CassetteError> {
        if let Some(parent) = path.parent().filter(|parent| !parent.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|error| CassetteError::Read {
                path: parent.display().to_string(),
                message: error.to_string(),
            })?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|error| CassetteError::Read { path: path.display().to_string(), message: error.to_string() })?;
        Ok(RecordingProvider { inner, path: path.to_owned(), file: Mutex::new(file) })
    }

    /// The cassette written.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[async_trait]
impl ModelProvider for RecordingProvider {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn chat(&self, caller: &str, request: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        let response = self.inner.chat(caller, request).await?;
        let entry = CassetteEntry {
            key: request_key(request),
            caller: caller.to_owned(),
            request: request.clone(),
            response: response.clone(),
        };
        let mut line =
            serde_json::to_string(&entry).map_err(|error| ProviderError::InvalidResponse(error.to_string()))?;
        line.push('\n');
        let mut file = self.file.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        file.write_all(line.as_bytes()).map_err(|error| {
            ProviderError::Config(format!("cannot append to cassette `{}`: {error}", self.path.display()))
        })?;
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{ChatMessage, Usage};

    fn request(prompt: &str) -> ChatRequest {
        ChatRequest {
            model: "m".into(),
            messages: vec![ChatMessage::new(Role::User, prompt)],
            temperature: None,
            max_tokens: None,
            response_schema: None,
            seed: None,
        }
    }

    fn response(text: &str) -> ChatResponse {
        ChatResponse { content: text.into(), model: "m".into(), usage: Usage::default(), finish_reason: None }
    }

    #[test]
    fn keys_are_stable_and_sensitive() {
        let key = request_key(&request("hello"));
        assert_eq!(key, request_key(&request("hello")));
        assert_eq!(key.len(), 32);
        assert_ne!(key, request_key(&request("hello!")));
        let mut other = request("hello");
        other.temperature = Some(0.0);
        assert_ne!(key, request_key(&other));
    }

    #[tokio::test]
    async fn replays_in_order_and_misses_loudly() {
        let entries = [
            CassetteEntry { key: String::new(), caller: "a".into(), request: request("q"), response: response("one") },
            CassetteEntry { key: String::new(), caller: "a".into(), request: request("q"), response: response("two") },
        ];
        let text: String =
            entries.iter().map(|entry| serde_json::to_string(entry).unwrap() + "\n").collect::<Vec<_>>().concat();
        let provider = ReplayProvider::from_entries("c.jsonl".into(), parse_cassette(&text, "c.jsonl").unwrap());
        assert_eq!(provider.chat("a", &request("q")).await.unwrap().content, "one");
        assert_eq!(provider.chat("a", &request("q")).await.unwrap().content, "two");
        assert_eq!(provider.chat("a", &request("q")).await.unwrap().content, "two");
        let error = provider.chat("a", &request("question")).await.unwrap_err();
        let message = error.to_string();
        assert!(message.contains("step `a`"), "{message}");
        assert!(message.contains("differs in user message 0, at character 1"), "{message}");
        let error = provider.chat("b", &request("q?")).await.unwrap_err();
        assert!(error.to_string().contains("nothing is recorded for `b`"), "{error}");
        // Same messages, other parameters: the miss names each one that differs.
        let mut reseeded = request("q");
        reseeded.seed = Some(42);
        reseeded.max_tokens = Some(64);
        let message = provider.chat("a", &reseeded).await.unwrap_err().to_string();
        assert!(
            message.contains(
                "the first of them differs in max_tokens: recorded none, asked 64; seed: recorded none, asked 42"
            ),
            "{message}"
        );
        let mut schema = request("q");
        schema.response_schema = Some(serde_json::json!({"type": "object"}));
        let message = provider.chat("a", &schema).await.unwrap_err().to_string();
        assert!(message.contains("differs in response_schema: recorded none, asked a schema"), "{message}");
    }

    /// By default any caller replays a recorded request (a renamed step); with strict callers
    /// only the caller that recorded it does, each with its own order of answers.
    #[tokio::test]
    async fn strict_callers_answer_only_their_own_recordings() {
        let entries = vec![
            CassetteEntry {
                key: String::new(),
                caller: "a v1".into(),
                request: request("q"),
                response: response("one"),
            },
            CassetteEntry { key: String::new(), caller: "b".into(), request: request("q"), response: response("two") },
        ];
        let entries: Vec<CassetteEntry> = entries
            .into_iter()
            .map(|mut entry| {
                entry.key = request_key(&entry.request);
                entry
            })
            .collect();
        let lax = ReplayProvider::from_entries("c.jsonl".into(), entries.clone());
        assert_eq!(lax.chat("a v2", &request("q")).await.unwrap().content, "one");
        let strict = ReplayProvider::from_entries("c.jsonl".into(), entries).with_strict_callers();
        assert_eq!(strict.chat("b", &request("q")).await.unwrap().content, "two");
        assert_eq!(strict.chat("a v1", &request("q")).await.unwrap().content, "one");
        let message = strict.chat("a v2", &request("q")).await.unwrap_err().to_string();
        assert!(message.contains("nothing is recorded for `a v2`") && message.contains("a v1"), "{message}");
    }

    #[test]
    fn stale_keys_and_bad_lines_are_reported_with_their_line() {
        let entry =
            CassetteEntry { key: "0".repeat(32), caller: "a".into(), request: request("q"), response: response("x") };
        let text = format!("\n{}\n", serde_json::to_string(&entry).unwrap());
        let error = parse_cassette(&text, "c.jsonl").unwrap_err();
        assert!(matches!(error, CassetteError::StaleKey { line: 2, .. }), "{error}");
        let error = parse_cassette("{\"caller\": 1}", "c.jsonl").unwrap_err();
        assert!(error.to_string().starts_with("cassette `c.jsonl` line 1:"), "{error}");
    }

    #[tokio::test]
    async fn recording_writes_a_cassette_that_replays() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/c.jsonl");
        let inner = Arc::new(ReplayProvider::from_entries(
            "inner".into(),
            parse_cassette(
                &serde_json::to_string(&CassetteEntry {
                    key: String::new(),
                    caller: "x".into(),
                    request: request("q"),
                    response: response("answer"),
                })
                .unwrap(),
                "inner",
            )
            .unwrap(),
        ));
        let recorder = RecordingProvider::new(inner, &path).unwrap();
        recorder.chat("step_one", &request("q")).await.unwrap();
        let replay = ReplayProvider::load(&path).unwrap();
        assert_eq!(replay.entries()[0].caller, "step_one");
        assert_eq!(replay.chat("anyone", &request("q")).await.unwrap().content, "answer");
    }
}
