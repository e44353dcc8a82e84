//! The agent port: how the engine asks an agent (a model, or a whole agent framework) for an
//! answer, and [`ProviderAgent`], the agent backed by a [`ModelProvider`].
//!
//! An agent step renders its prompt, builds an [`AgentRequest`] and calls
//! [`AgentAdapter::invoke`]. The adapter returns a typed [`AgentResponse`] and reports what
//! it did (model requests and responses) as canonical events on the [`EventSink`] it is given.

use std::collections::HashMap;
use std::sync::Arc;

use agentic_core::{CanonicalEvent, ErrorClass, EventStatus, EventType};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::provider::{ChatMessage, ChatRequest, ModelProvider, ProviderError, Role, Usage};
use crate::sink::EventSink;

/// What an agent step asks of an agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentRequest {
    /// The step that asks; used in error messages, events and cassette lookups.
    pub step: String,
    /// The agent's role, for example `reviewer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The model or tier the step names; `None` means the adapter's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The rendered system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The rendered prompt.
    pub prompt: String,
    /// A JSON Schema the reply should follow (built from the step's declared outputs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_schema: Option<Value>,
}

/// An agent's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentResponse {
    /// The reply text.
    pub text: String,
    /// The model that answered.
    pub model: String,
    /// Token usage, when known.
    #[serde(default)]
    pub usage: Usage,
    /// Why generation stopped, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
}

/// Why an agent call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The model provider failed.
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// The agent answered, but not usefully (empty reply, refusal the adapter can detect).
    #[error("agent for step `{step}` gave an unusable answer: {message}")]
    InvalidAnswer {
        /// The step that asked.
        step: String,
        /// What is wrong with the answer.
        message: String,
    },
}

impl AgentError {
    /// The error class that retry policies match on.
    pub fn class(&self) -> ErrorClass {
        match self {
            AgentError::Provider(error) if error.is_retryable() => ErrorClass::Transient,
            AgentError::Provider(ProviderError::InvalidResponse(_)) => ErrorClass::Infra,
            AgentError::Provider(_) => ErrorClass::User,
            AgentError::InvalidAnswer { .. } => ErrorClass::Validation,
        }
    }

    /// A short machine-readable type, for example `replay_miss` or `rate_limited`.
    pub fn error_type(&self) -> &'static str {
        match self {
            AgentError::Provider(ProviderError::RateLimited { .. }) => "rate_limited",
            AgentError::Provider(ProviderError::Http { .. }) => "http_error",
            AgentError::Provider(ProviderError::Timeout { .. }) => "provider_timeout",
            AgentError::Provider(ProviderError::Connect(_)) => "connect_failed",
            AgentError::Provider(ProviderError::InvalidResponse(_)) => "invalid_response",
            AgentError::Provider(ProviderError::ReplayMiss { .. }) => "replay_miss",
            AgentError::Provider(ProviderError::Config(_)) => "provider_config",
            AgentError::InvalidAnswer { .. } => "invalid_answer",
        }
    }
}

/// An agent: anything that turns a prompt into an answer.
///
/// Implementations are the integration point for agent frameworks. They must be cancel-safe:
/// the engine drops the future when the step times out or the run is cancelled.
#[async_trait]
pub trait AgentAdapter: Send + Sync {
    /// A short name for logs and reports.
    fn name(&self) -> &str;

    /// The model a request will use, after defaults and tier mapping (for reports).
    fn resolve_model(&self, requested: Option<&str>) -> String;

    /// Answers one request; reports model calls as canonical events on `events`.
    async fn invoke(&self, request: &AgentRequest, events: &dyn EventSink) -> Result<AgentResponse, AgentError>;
}

/// Settings of a [`ProviderAgent`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AgentSettings {
    /// The model used when a step names none.
    pub default_model: String,
    /// Tier names (as written in a step's `model:`) mapped to provider model names. A name
    /// that is not a tier is passed to the provider as it is.
    pub tiers: HashMap<String, String>,
    /// Sampling temperature sent with every request.
    pub temperature: Option<f64>,
    /// Most tokens per reply.
    pub max_tokens: Option<u32>,
    /// Sampling seed, where the provider supports one.
    pub seed: Option<u64>,
}

/// The default agent: one chat request per invocation through a [`ModelProvider`].
pub struct ProviderAgent {
    provider: Arc<dyn ModelProvider>,
    settings: AgentSettings,
}

impl ProviderAgent {
    /// An agent that asks `provider`.
    pub fn new(provider: Arc<dyn ModelProvider>, settings: AgentSettings) -> ProviderAgent {
        ProviderAgent { provider, settings }
    }

    /// The chat request sent for `request`: the system prompt (when any), then the prompt.
    pub fn chat_request(&self, request: &AgentRequest) -> ChatRequest {
        let mut messages = Vec::with_capacity(2);
        if let Some(system) = request.system.as_deref().filter(|system| !system.trim().is_empty()) {
            messages.push(ChatMessage::new(Role::System, system));
        }
        messages.push(ChatMessage::new(Role::User, request.prompt.clone()));
        ChatRequest {
            model: self.resolve_model(request.model.as_deref()),
            messages,
            temperature: self.settings.temperature,
            max_tokens: self.settings.max_tokens,
            response_schema: request.response_schema.clone(),
            seed: self.settings.seed,
        }
    }
}

#[async_trait]
impl AgentAdapter for ProviderAgent {
    fn name(&self) -> &str {
        self.provider.name()
    }

    fn resolve_model(&self, requested: Option<&str>) -> String {
        match requested.filter(|name| !name.trim().is_empty()) {
            Some(name) => self.settings.tiers.get(name).cloned().unwrap_or_else(|| name.to_owned()),
            None => self.settings.default_model.clone(),
        }
    }

    async fn invoke(&self, request: &AgentRequest, events: &dyn EventSink) -> Result<AgentResponse, AgentError> {
        let chat = self.chat_request(request);
        let mut start = CanonicalEvent::new(EventType::LlmRequest, chrono::Utc::now())
            .with_step(request.step.clone())
            .with_data(json!({"provider": self.provider.name(), "model": chat.model, "messages": chat.messages.len()}));
        start.attributes.insert("gen_ai.request.model".to_owned(), json!(chat.model));
        events.emit(&start);
        let outcome = self.provider.chat(&request.step, &chat).await;
        let mut end = CanonicalEvent::new(EventType::LlmResponse, chrono::Utc::now()).with_step(request.step.clone());
        match &outcome {
            Ok(response) => {
                end.status = Some(EventStatus::Ok);
                end.data = json!({
                    "model": response.model,
                    "usage": response.usage,
                    "finish_reason": response.finish_reason,
                    "chars": response.content.len(),
                });
                end.attributes.insert("gen_ai.response.model".to_owned(), json!(response.model));
                end.attributes.insert("gen_ai.usage.input_tokens".to_owned(), json!(response.usage.prompt_tokens));
                end.attributes.insert("gen_ai.usage.output_tokens".to_owned(), json!(response.usage.completion_tokens));
            }
            Err(error) => {
                end.status = Some(EventStatus::Error);
                end.data = json!({"error": error.to_string()});
            }
        }
        events.emit(&end);
        let response = outcome?;
        Ok(AgentResponse {
            text: response.content,
            model: response.model,
            usage: response.usage,
            finish_reason: response.finish_reason,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ChatResponse;
    use crate::sink::MemorySink;

    struct Echo;

    #[async_trait]
    impl ModelProvider for Echo {
        fn name(&self) -> &str {
            "echo"
        }

        async fn chat(&self, _caller: &str, request: &ChatRequest) -> Result<crate::ChatResponse, ProviderError> {
            Ok(ChatResponse {
                content: request.messages.last().map(|m| m.content.clone()).unwrap_or_default(),
                model: request.model.clone(),
                usage: Usage { prompt_tokens: 3, completion_tokens: 4 },
                finish_reason: Some("stop".into()),
            })
        }
    }

    fn request(model: Option<&str>) -> AgentRequest {
        AgentRequest {
            step: "s".into(),
            role: None,
            model: model.map(str::to_owned),
            system: Some("be brief".into()),
            prompt: "hi".into(),
            response_schema: None,
        }
    }

    #[tokio::test]
    async fn provider_agent_maps_tiers_and_reports_calls() {
        let settings = AgentSettings {
            default_model: "base".into(),
            tiers: HashMap::from([("reviewer".to_owned(), "big-model".to_owned())]),
            ..AgentSettings::default()
        };
        let agent = ProviderAgent::new(Arc::new(Echo), settings);
        let sink = MemorySink::default();
        let response = agent.invoke(&request(Some("reviewer")), &sink).await.unwrap();
        assert_eq!(response.model, "big-model");
        assert_eq!(response.text, "hi");
        assert_eq!(agent.resolve_model(None), "base");
        assert_eq!(agent.resolve_model(Some("other")), "other");
        let types: Vec<EventType> = sink.events().iter().map(|event| event.event_type).collect();
        assert_eq!(types, vec![EventType::LlmRequest, EventType::LlmResponse]);
        let chat = agent.chat_request(&request(None));
        assert_eq!(chat.messages.len(), 2);
        assert_eq!(chat.messages[0].role, Role::System);
    }

    #[test]
    fn error_classes() {
        let miss =
            AgentError::from(ProviderError::ReplayMiss { step: "s".into(), key: "k".into(), cassette: "c".into() });
        assert_eq!(miss.class(), ErrorClass::User);
        assert_eq!(miss.error_type(), "replay_miss");
        assert_eq!(AgentError::from(ProviderError::RateLimited { retry_after: None }).class(), ErrorClass::Transient);
    }
}
