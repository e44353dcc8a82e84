//! Model providers: one chat-completion interface for every model service.
//!
//! [`ModelProvider`] is the port the engine (agent steps) and the judge talk to. The
//! OpenAI-compatible HTTP client, the Anthropic client and the `replay` provider (recorded
//! exchanges, offline) implement it. Only this module knows a model service's wire format.

use std::time::Duration;

mod anthropic;
mod concurrency;
mod http;
mod openai;
#[cfg(feature = "test-support")]
pub mod testing;

pub use anthropic::Anthropic;
pub use concurrency::{AdaptiveLimiter, CallOutcome, LimiterPermit, LimiterSnapshot};
pub use http::{HttpProviderConfig, Pricing, StructuredOutput, http_client, install_crypto_provider};
pub use openai::{OpenAiCompatible, WIRE_SEED_MASK};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who wrote a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions for the model.
    System,
    /// The user's turn.
    User,
    /// The model's turn.
    Assistant,
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Who wrote it.
    pub role: Role,
    /// The text.
    pub content: String,
}

impl ChatMessage {
    /// A message of `role` with `content`.
    pub fn new(role: Role, content: impl Into<String>) -> ChatMessage {
        ChatMessage { role, content: content.into() }
    }
}

/// A chat-completion request, independent of any service's wire format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The model name as the service knows it.
    pub model: String,
    /// The conversation.
    pub messages: Vec<ChatMessage>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Most tokens to generate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// A JSON Schema the reply must follow, sent as the service's structured-output option
    /// where it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_schema: Option<Value>,
    /// Sampling seed, where the service supports one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

/// Tokens used by one call.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt (input) tokens.
    pub prompt_tokens: u64,
    /// Completion (output) tokens.
    pub completion_tokens: u64,
}

/// A chat-completion reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The reply text.
    pub content: String,
    /// The model that answered, as the service reports it.
    pub model: String,
    /// Token usage, when reported.
    #[serde(default)]
    pub usage: Usage,
    /// Why generation stopped, as reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
}

/// Why a provider call failed.
/// What to do about an HTTP status that says the URL serves no such route (a base URL
/// without `/v1`, or one of another kind of service).
fn route_hint(status: u16) -> &'static str {
    if matches!(status, 404 | 405 | 501) {
        " (the service has no such route: check the base URL; an OpenAI-compatible one usually ends in `/v1`)"
    } else {
        ""
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The service answered 429; `retry_after` is its `Retry-After`, when sent.
    #[error("rate limited by the model service (429){}", retry_after.map(|d| format!("; retry after {:.1}s", d.as_secs_f64())).unwrap_or_default())]
    RateLimited {
        /// How long the service asked to wait.
        retry_after: Option<Duration>,
    },
    /// The service answered with an error status.
    #[error("model service at {url} answered HTTP {status}: {body}{}", route_hint(*status))]
    Http {
        /// The URL that was posted to (a base URL without `/v1` shows here).
        url: String,
        /// The HTTP status.
        status: u16,
        /// The start of the response body.
        body: String,
    },
    /// The call took longer than its timeout.
    #[error(
        "model call to {url} timed out after {after:.1?}; raise `timeout_secs` in the configuration if the model needs \
         longer"
    )]
    Timeout {
        /// The attempt's timeout.
        after: Duration,
        /// The URL that was called.
        url: String,
    },
    /// The service could not be reached.
    #[error("cannot reach the model service: {0}")]
    Connect(String),
    /// The reply was not in the expected shape.
    #[error("model service sent an unexpected reply: {0}")]
    InvalidResponse(String),
    /// The replay provider has no recorded exchange for this request.
    #[error(
        "no recorded exchange for step `{step}` (key {key}) in {cassette}; record it against a real provider (`agentic run --provider openai --record`, `agentic check --judge-record FILE`)"
    )]
    ReplayMiss {
        /// The step (or judge call) that asked.
        step: String,
        /// The request key looked up.
        key: String,
        /// The cassette file searched.
        cassette: String,
    },
    /// The provider is not configured (missing API key variable, base URL, ...).
    #[error("model provider is not configured: {0}")]
    Config(String),
}

impl ProviderError {
    /// Whether retrying the same call may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            ProviderError::RateLimited { .. } | ProviderError::Timeout { .. } | ProviderError::Connect(_) => true,
            ProviderError::Http { status, .. } => *status >= 500,
            _ => false,
        }
    }
}

/// A chat-completion service.
#[async_trait]
pub trait ModelProvider: Send + Sync {
    /// A short name for logs and reports, for example `openai` or `replay`.
    fn name(&self) -> &str;

    /// Sends one request. `caller` names who asks (a step name, or `judge:<criterion>`), for
    /// error messages and cassette keys.
    async fn chat(&self, caller: &str, request: &ChatRequest) -> Result<ChatResponse, ProviderError>;
}
