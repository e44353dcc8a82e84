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
            // Services read `seed` as a signed 64-bit integer (Ollama) or cap it there (vLLM),
            // some at 32 bits (llama.cpp): its low 31 bits go on the wire, which every one
            // takes, so a drawn seed never makes a request fail.
            object.insert("seed".into(), json!(seed & WIRE_SEED_MASK));
        }
        if let Some(schema) = &request.response_schema {
            match self.core.config.structured_output {
                StructuredOutput::JsonSchema => {
                    object.insert(
                        "response_format".into(),
                        json!({"type": "json_schema", "json_schema": {"name": "reply", "schema": schema, "strict": strict_compatible(schema)}}),
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

/// The bits of a request's seed sent to the service (see [`OpenAiCompatible::request_body`]).
pub const WIRE_SEED_MASK: u64 = 0x7FFF_FFFF;

/// Whether OpenAI's strict structured outputs accept `schema`: every object lists all its
/// properties as required and allows no others. A schema with optional fields is sent with
/// `strict: false` (the service would refuse it otherwise); the reply is validated here
/// either way.
fn strict_compatible(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Object(properties)) = map.get("properties") {
                let required: Vec<&str> = map
                    .get("required")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                if map.get("additionalProperties") != Some(&Value::Bool(false))
                    || !properties.keys().all(|key| required.contains(&key.as_str()))
                {
                    return false;
                }
            }
            map.values().all(strict_compatible)
        }
        Value::Array(items) => items.iter().all(strict_compatible),
        _ => true,
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
    fn seeds_on_the_wire_fit_every_service() {
        let mut request = request();
        request.seed = Some(14_487_782_410_073_337_730);
        let body = client(StructuredOutput::JsonSchema).request_body(&request);
        let sent = body["seed"].as_u64().unwrap();
        assert!(sent <= i32::MAX as u64, "{sent}");
        assert_eq!(sent, 14_487_782_410_073_337_730 & WIRE_SEED_MASK);
    }

    #[test]
    fn strict_only_for_schemas_openai_accepts_as_strict() {
        let strict = |schema: Value| {
            let mut request = request();
            request.response_schema = Some(schema);
            client(StructuredOutput::JsonSchema).request_body(&request)["response_format"]["json_schema"]["strict"]
                .clone()
        };
        let closed = json!({"type": "object", "additionalProperties": false, "required": ["a", "b"],
            "properties": {"a": {"type": "string"}, "b": {"type": "array", "items": {"type": "object",
            "additionalProperties": false, "required": ["c"], "properties": {"c": {"type": "integer"}}}}}});
        assert_eq!(strict(closed.clone()), json!(true));
        // An optional field (the tier-3 verdict's `notes`), at the top or inside: not strict.
        let mut optional = closed.clone();
        optional["required"] = json!(["a"]);
        assert_eq!(strict(optional), json!(false));
        let mut nested = closed.clone();
        nested["properties"]["b"]["items"]["required"] = json!([]);
        assert_eq!(strict(nested), json!(false));
        let mut open = closed;
        open.as_object_mut().unwrap().remove("additionalProperties");
        assert_eq!(strict(open), json!(false));
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
