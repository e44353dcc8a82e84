//! The OpenAI-compatible chat-completions client: OpenAI, vLLM, Ollama, llama.cpp's server,
//! llama-cpp-python, LiteLLM and anything else that serves `POST {base_url}/chat/completions`.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::concurrency::AdaptiveLimiter;
use super::http::{HttpCore, HttpProviderConfig, StructuredOutput, truncate};
use super::{ChatRequest, ChatResponse, ModelProvider, ProviderError, Usage};

/// A client for an OpenAI-compatible `/chat/completions` endpoint, with retries (honouring
/// `Retry-After`), per-attempt timeouts and adaptive concurrency.
#[derive(Debug, Clone)]
pub struct OpenAiCompatible {
    core: HttpCore,
}

impl OpenAiCompatible {
    /// A client for `config`. Fails when the URL is malformed or the API key variable is unset.
    pub fn new(config: HttpProviderConfig) -> Result<OpenAiCompatible, ProviderError> {
        Ok(OpenAiCompatible { core: HttpCore::new(config)? })
    }

    /// Shares `limiter` with other clients, so that they stay under one global limit.
    pub fn with_limiter(mut self, limiter: Arc<AdaptiveLimiter>) -> OpenAiCompatible {
        self.core.limiter = limiter;
        self
    }

    /// The configuration.
    pub fn config(&self) -> &HttpProviderConfig {
        &self.core.config
    }

    /// The limiter this client takes slots from.
    pub fn limiter(&self) -> &Arc<AdaptiveLimiter> {
        &self.core.limiter
    }

    /// The wire body of `request`.
    pub fn request_body(&self, request: &ChatRequest) -> Value {
        let model = if request.model.is_empty() { &self.core.config.model } else { &request.model };
        let mut body = json!({ "model": model, "messages": request.messages });
        let object = body.as_object_mut().expect("a JSON object literal");
        if let Some(temperature) = request.temperature {
            object.insert("temperature".into(), json!(temperature));
        }
        if let Some(max_tokens) = request.max_tokens {
            object.insert("max_tokens".into(), json!(max_tokens));
        }
        if let Some(seed) = request.seed {
            object.insert("seed".into(), json!(seed));
        }
        if let Some(schema) = &request.response_schema {
            match self.core.config.structured_output {
                StructuredOutput::JsonSchema => {
                    object.insert(
                        "response_format".into(),
                        json!({"type": "json_schema", "json_schema": {"name": "reply", "schema": schema, "strict": true}}),
                    );
                }
                StructuredOutput::JsonObject => {
                    object.insert("response_format".into(), json!({"type": "json_object", "schema": schema}));
                }
                StructuredOutput::None => {}
            }
        }
        body
    }
}

#[async_trait]
impl ModelProvider for OpenAiCompatible {
    fn name(&self) -> &str {
        "openai"
    }

    async fn chat(&self, caller: &str, request: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        let body = self.request_body(request);
        let mut headers = Vec::new();
        if let Some(key) = &self.core.api_key {
            headers.push(("authorization", format!("Bearer {key}")));
        }
        let url = self.core.url("chat/completions");
        tracing::debug!(caller, url, "chat completion");
        let reply = self.core.call(&url, &headers, &body).await?;
        parse_reply(&reply)
    }
}

/// Reads an OpenAI chat-completion body.
fn parse_reply(reply: &Value) -> Result<ChatResponse, ProviderError> {
    let choice = reply.pointer("/choices/0").ok_or_else(|| {
        ProviderError::InvalidResponse(format!("no `choices[0]` in {}", truncate(&reply.to_string(), 200)))
    })?;
    let content = match choice.pointer("/message/content") {
        Some(Value::String(text)) => text.clone(),
        _ => {
            let refusal = choice.pointer("/message/refusal").and_then(Value::as_str);
            return Err(ProviderError::InvalidResponse(match refusal {
                Some(refusal) => format!("the model refused: {refusal}"),
                None => format!("`choices[0].message.content` is not text in {}", truncate(&reply.to_string(), 200)),
            }));
        }
    };
    let usage = Usage {
        prompt_tokens: reply.pointer("/usage/prompt_tokens").and_then(Value::as_u64).unwrap_or(0),
        completion_tokens: reply.pointer("/usage/completion_tokens").and_then(Value::as_u64).unwrap_or(0),
    };
    Ok(ChatResponse {
        content,
        model: reply.get("model").and_then(Value::as_str).unwrap_or_default().to_owned(),
        usage,
        finish_reason: choice.get("finish_reason").and_then(Value::as_str).map(str::to_owned),
    })
}

#[cfg(test)]
mod tests {
    use super::super::{ChatMessage, Role};
    use super::*;

    fn client(structured_output: StructuredOutput) -> OpenAiCompatible {
        let mut config = HttpProviderConfig::new("http://127.0.0.1:9/v1", "judge-model");
        config.structured_output = structured_output;
        OpenAiCompatible::new(config).unwrap()
    }

    fn request() -> ChatRequest {
        ChatRequest {
            model: String::new(),
            messages: vec![ChatMessage::new(Role::User, "hi")],
            temperature: Some(0.0),
            max_tokens: Some(64),
            response_schema: Some(json!({"type": "object"})),
            seed: Some(7),
        }
    }

    #[test]
    fn body_uses_config_model_and_json_schema_format() {
        let body = client(StructuredOutput::JsonSchema).request_body(&request());
        assert_eq!(body["model"], "judge-model");
        assert_eq!(body["response_format"]["type"], "json_schema");
        assert_eq!(body["response_format"]["json_schema"]["schema"], json!({"type": "object"}));
        assert_eq!(body["seed"], 7);
        assert_eq!(body["messages"][0]["role"], "user");
    }

    #[test]
    fn body_json_object_form_for_llama_cpp_python() {
        let body = client(StructuredOutput::JsonObject).request_body(&request());
        assert_eq!(body["response_format"], json!({"type": "json_object", "schema": {"type": "object"}}));
        let body = client(StructuredOutput::None).request_body(&request());
        assert!(body.get("response_format").is_none());
    }

    #[test]
    fn reply_without_content_is_invalid() {
        let error = parse_reply(&json!({"choices": [{"message": {"content": null, "refusal": "no"}}]})).unwrap_err();
        assert!(error.to_string().contains("refused"), "{error}");
        assert!(parse_reply(&json!({"choices": []})).is_err());
    }
}
