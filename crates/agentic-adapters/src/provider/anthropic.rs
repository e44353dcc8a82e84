//! The Anthropic Messages API client (`POST {base_url}/messages`).
//!
//! System messages go to the top-level `system` field. A JSON Schema for structured output is
//! sent as a single forced tool (`tools: [{name: "reply", input_schema}]`, `tool_choice` that
//! tool); the tool call's `input` comes back serialized as the reply text.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::concurrency::AdaptiveLimiter;
use super::http::{HttpCore, HttpProviderConfig, truncate};
use super::{ChatRequest, ChatResponse, ModelProvider, ProviderError, Role, Usage};

/// The `anthropic-version` header sent with every call.
pub(crate) const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Anthropic requires `max_tokens`; this is used when a request sets none.
const DEFAULT_MAX_TOKENS: u32 = 1024;

/// A client for the Anthropic Messages API with the same retries, timeouts and adaptive
/// concurrency as [`super::OpenAiCompatible`]. `base_url` is for example
/// `https://api.anthropic.com/v1`.
#[derive(Debug, Clone)]
pub struct Anthropic {
    core: HttpCore,
}

impl Anthropic {
    /// A client for `config`. Fails when the URL is malformed or the API key variable is unset.
    pub fn new(config: HttpProviderConfig) -> Result<Anthropic, ProviderError> {
        Ok(Anthropic { core: HttpCore::new(config)? })
    }

    /// Shares `limiter` with other clients.
    pub fn with_limiter(mut self, limiter: Arc<AdaptiveLimiter>) -> Anthropic {
        self.core.limiter = limiter;
        self
    }

    /// The configuration.
    pub fn config(&self) -> &HttpProviderConfig {
        &self.core.config
    }

    /// The wire body of `request`.
    pub fn request_body(&self, request: &ChatRequest) -> Value {
        let model = if request.model.is_empty() { &self.core.config.model } else { &request.model };
        let system: Vec<&str> =
            request.messages.iter().filter(|m| m.role == Role::System).map(|m| m.content.as_str()).collect();
        let messages: Vec<Value> = request
            .messages
            .iter()
            .filter(|m| m.role != Role::System)
            .map(
                |m| json!({"role": if m.role == Role::Assistant { "assistant" } else { "user" }, "content": m.content}),
            )
            .collect();
        let mut body = json!({
            "model": model,
            "max_tokens": request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            "messages": messages,
        });
        let object = body.as_object_mut().expect("a JSON object literal");
        if !system.is_empty() {
            object.insert("system".into(), json!(system.join("\n\n")));
        }
        if let Some(temperature) = request.temperature {
            object.insert("temperature".into(), json!(temperature));
        }
        if let Some(schema) = &request.response_schema {
            object.insert(
                "tools".into(),
                json!([{"name": "reply", "description": "Give the reply in this shape.", "input_schema": schema}]),
            );
            object.insert("tool_choice".into(), json!({"type": "tool", "name": "reply"}));
        }
        body
    }
}

#[async_trait]
impl ModelProvider for Anthropic {
    fn name(&self) -> &str {
        "anthropic"
    }

    async fn chat(&self, caller: &str, request: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        let body = self.request_body(request);
        let mut headers = vec![("anthropic-version", ANTHROPIC_VERSION.to_owned())];
        if let Some(key) = &self.core.api_key {
            headers.push(("x-api-key", key.clone()));
        }
        let url = self.core.url("messages");
        tracing::debug!(caller, url, "anthropic message");
        let reply = self.core.call(&url, &headers, &body).await?;
        parse_reply(&reply)
    }
}

fn parse_reply(reply: &Value) -> Result<ChatResponse, ProviderError> {
    let blocks = reply.get("content").and_then(Value::as_array).ok_or_else(|| {
        ProviderError::InvalidResponse(format!("no `content` array in {}", truncate(&reply.to_string(), 200)))
    })?;
    let tool_input =
        blocks.iter().find(|b| b.get("type").and_then(Value::as_str) == Some("tool_use")).and_then(|b| b.get("input"));
    let content = match tool_input {
        Some(input) => input.to_string(),
        None => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
    };
    Ok(ChatResponse {
        content,
        model: reply.get("model").and_then(Value::as_str).unwrap_or_default().to_owned(),
        usage: Usage {
            prompt_tokens: reply.pointer("/usage/input_tokens").and_then(Value::as_u64).unwrap_or(0),
            completion_tokens: reply.pointer("/usage/output_tokens").and_then(Value::as_u64).unwrap_or(0),
        },
        finish_reason: reply.get("stop_reason").and_then(Value::as_str).map(str::to_owned),
    })
}

#[cfg(test)]
mod tests {
    use super::super::ChatMessage;
    use super::*;

    #[test]
    fn system_goes_top_level_and_schema_becomes_a_forced_tool() {
        let client = Anthropic::new(HttpProviderConfig::new("http://127.0.0.1:9/v1", "claude-x")).unwrap();
        let request = ChatRequest {
            model: String::new(),
            messages: vec![ChatMessage::new(Role::System, "be strict"), ChatMessage::new(Role::User, "grade")],
            temperature: Some(0.0),
            max_tokens: None,
            response_schema: Some(json!({"type": "object"})),
            seed: None,
        };
        let body = client.request_body(&request);
        assert_eq!(body["system"], "be strict");
        assert_eq!(body["messages"].as_array().unwrap().len(), 1);
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
        assert_eq!(body["tool_choice"]["name"], "reply");
    }

    #[test]
    fn tool_use_input_is_the_reply_text() {
        let reply = json!({"model": "m", "content": [{"type": "tool_use", "name": "reply", "input": {"score": 4}}],
                           "usage": {"input_tokens": 3, "output_tokens": 2}});
        let response = parse_reply(&reply).unwrap();
        assert_eq!(response.content, r#"{"score":4}"#);
        assert_eq!(response.usage.completion_tokens, 2);
    }
}
