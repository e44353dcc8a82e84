//! The verdict cache: model replies keyed by the judge's identity and the exact request, in
//! SQLite (sqlx).
//!
//! The key is the SHA-256 of the judge identity (name, provider, model, version), the prompt
//! hash, the rubric hash and the full request (rendered messages, temperature, seed, token
//! limit, reply schema). Changing any of them misses the cache, so a judge change never
//! reuses a stale verdict. In [`CacheMode::Replay`] (CI) the judge never calls out: a miss
//! is an error that names the key.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use agentic_adapters::{ChatRequest, ChatResponse};
use serde::{Deserialize, Serialize};
use sqlx::Row;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};

use crate::error::JudgeError;
use crate::prompt::sha256_hex;

/// How the cache is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheMode {
    /// Read hits, call the model on a miss and store the reply.
    #[default]
    ReadWrite,
    /// Read hits only; a miss is an error and no model is ever called (CI).
    Replay,
    /// Call the model every time and overwrite stored replies.
    Refresh,
}

/// What identifies a judge for caching.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheIdentity {
    /// The judge name.
    pub judge: String,
    /// `openai` or `anthropic`.
    pub provider: String,
    /// The model name.
    pub model: String,
    /// The judge version label.
    pub version: String,
    /// SHA-256 of the prompt template.
    pub prompt_hash: String,
    /// SHA-256 of the rubric criteria.
    pub rubric_hash: String,
}

impl CacheIdentity {
    /// The cache key of `request` for this identity.
    pub fn key(&self, request: &ChatRequest) -> String {
        let identity = serde_json::to_string(self).unwrap_or_default();
        let request = serde_json::to_string(request).unwrap_or_default();
        sha256_hex(format!("{identity}\n{request}").as_bytes())
    }
}

/// An SQLite-backed reply cache.
#[derive(Debug, Clone)]
pub struct JudgeCache {
    pool: SqlitePool,
    path: PathBuf,
    mode: CacheMode,
}

impl JudgeCache {
    /// Opens (creating if needed) the cache at `path`.
    pub async fn open(path: &Path, mode: CacheMode) -> Result<JudgeCache, JudgeError> {
        let error = |message: String| JudgeError::Cache { path: path.display().to_string(), message };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| error(e.to_string()))?;
        }
        let options = SqliteConnectOptions::from_str("sqlite://")
            .map_err(|e| error(e.to_string()))?
            .filename(path)
            .create_if_missing(mode != CacheMode::Replay)
            .journal_mode(SqliteJournalMode::Wal)
            .busy_timeout(Duration::from_secs(10));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await
            .map_err(|e| error(e.to_string()))?;
        sqlx::query(
            "CREATE TABLE IF NOT EXISTS judge_replies (
                key TEXT PRIMARY KEY,
                judge TEXT NOT NULL,
                model TEXT NOT NULL,
                version TEXT NOT NULL,
                prompt_hash TEXT NOT NULL,
                rubric_hash TEXT NOT NULL,
                request TEXT NOT NULL,
                response TEXT NOT NULL
            )",
        )
        .execute(&pool)
        .await
        .map_err(|e| error(e.to_string()))?;
        Ok(JudgeCache { pool, path: path.to_owned(), mode })
    }

    /// The mode.
    pub fn mode(&self) -> CacheMode {
        self.mode
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The stored reply for `key`, unless the mode is `refresh`.
    pub async fn get(&self, key: &str) -> Result<Option<ChatResponse>, JudgeError> {
        if self.mode == CacheMode::Refresh {
            return Ok(None);
        }
        let row = sqlx::query("SELECT response FROM judge_replies WHERE key = ?1")
            .bind(key)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.error(e))?;
        let Some(row) = row else { return Ok(None) };
        let text: String = row.try_get("response").map_err(|e| self.error(e))?;
        serde_json::from_str(&text).map(Some).map_err(|e| JudgeError::Cache {
            path: self.path.display().to_string(),
            message: format!("entry `{key}`: {e}"),
        })
    }

    /// Stores `response` under `key`.
    pub async fn put(
        &self,
        key: &str,
        identity: &CacheIdentity,
        request: &ChatRequest,
        response: &ChatResponse,
    ) -> Result<(), JudgeError> {
        sqlx::query(
            "INSERT OR REPLACE INTO judge_replies (key, judge, model, version, prompt_hash, rubric_hash, request, response)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )
        .bind(key)
        .bind(&identity.judge)
        .bind(&identity.model)
        .bind(&identity.version)
        .bind(&identity.prompt_hash)
        .bind(&identity.rubric_hash)
        .bind(serde_json::to_string(request).unwrap_or_default())
        .bind(serde_json::to_string(response).unwrap_or_default())
        .execute(&self.pool)
        .await
        .map_err(|e| self.error(e))?;
        Ok(())
    }

    /// How many replies are stored.
    pub async fn len(&self) -> Result<u64, JudgeError> {
        let row = sqlx::query("SELECT COUNT(*) AS n FROM judge_replies")
            .fetch_one(&self.pool)
            .await
            .map_err(|e| self.error(e))?;
        let count: i64 = row.try_get("n").map_err(|e| self.error(e))?;
        Ok(count as u64)
    }

    /// Whether the cache is empty.
    pub async fn is_empty(&self) -> Result<bool, JudgeError> {
        Ok(self.len().await? == 0)
    }

    fn error(&self, error: sqlx::Error) -> JudgeError {
        JudgeError::Cache { path: self.path.display().to_string(), message: error.to_string() }
    }
}

#[cfg(test)]
mod tests {
    use agentic_adapters::{ChatMessage, Role, Usage};

    use super::*;

    fn identity() -> CacheIdentity {
        CacheIdentity {
            judge: "j".into(),
            provider: "openai".into(),
            model: "m".into(),
            version: "1".into(),
            prompt_hash: "p".into(),
            rubric_hash: "r".into(),
        }
    }

    fn request(temperature: f64) -> ChatRequest {
        ChatRequest {
            model: String::new(),
            messages: vec![ChatMessage::new(Role::User, "grade")],
            temperature: Some(temperature),
            max_tokens: None,
            response_schema: None,
            seed: Some(1),
        }
    }

    #[test]
    fn any_identity_or_parameter_change_changes_the_key() {
        let base = identity().key(&request(0.0));
        assert_ne!(base, identity().key(&request(0.1)), "temperature");
        for change in [
            CacheIdentity { version: "2".into(), ..identity() },
            CacheIdentity { prompt_hash: "p2".into(), ..identity() },
            CacheIdentity { rubric_hash: "r2".into(), ..identity() },
            CacheIdentity { model: "m2".into(), ..identity() },
        ] {
            assert_ne!(base, change.key(&request(0.0)), "{change:?}");
        }
        assert_eq!(base, identity().key(&request(0.0)), "deterministic");
    }

    #[tokio::test]
    async fn stores_and_reads_back_and_replay_never_creates() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.sqlite");
        let missing = JudgeCache::open(&dir.path().join("none.sqlite"), CacheMode::Replay).await;
        assert!(missing.is_err(), "replay mode needs an existing cache");
        let cache = JudgeCache::open(&path, CacheMode::ReadWrite).await.unwrap();
        let response = ChatResponse {
            content: "{}".into(),
            model: "m".into(),
            usage: Usage { prompt_tokens: 1, completion_tokens: 2 },
            finish_reason: None,
        };
        let key = identity().key(&request(0.0));
        assert_eq!(cache.get(&key).await.unwrap(), None);
        cache.put(&key, &identity(), &request(0.0), &response).await.unwrap();
        assert_eq!(cache.get(&key).await.unwrap(), Some(response.clone()));
        assert_eq!(cache.len().await.unwrap(), 1);
        let replay = JudgeCache::open(&path, CacheMode::Replay).await.unwrap();
        assert_eq!(replay.get(&key).await.unwrap(), Some(response));
        let refresh = JudgeCache::open(&path, CacheMode::Refresh).await.unwrap();
        assert_eq!(refresh.get(&key).await.unwrap(), None, "refresh ignores stored replies");
    }
}
