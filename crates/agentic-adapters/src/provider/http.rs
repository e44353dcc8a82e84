//! The HTTP plumbing shared by the model clients: configuration, the reqwest client (rustls
//! with the ring provider), status-to-error mapping, `Retry-After`, and the retry loop.
//!
//! Every call goes through [`HttpCore::call`]: it takes a slot from the adaptive limiter,
//! sends the request with a per-attempt timeout, maps the answer to a [`ProviderError`], feeds
//! the outcome back to the limiter, and retries retryable errors with exponential backoff,
//! waiting what the service asked for in `Retry-After` when it answered 429.

use std::sync::{Arc, Once};
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::concurrency::{AdaptiveLimiter, CallOutcome};
use super::{ProviderError, Usage};

/// How a client sends a JSON Schema for structured output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StructuredOutput {
    /// OpenAI's `response_format: {type: json_schema, json_schema: {name, schema, strict}}`
    /// (OpenAI, vLLM, Ollama, LiteLLM, llama.cpp's `llama-server`).
    #[default]
    JsonSchema,
    /// `response_format: {type: json_object, schema}` (llama-cpp-python's server, which answers
    /// 500 to the `json_schema` form).
    JsonObject,
    /// Send no schema; the reply is still validated by the caller.
    None,
}

/// Prices of one model, in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pricing {
    /// Dollars per million prompt (input) tokens.
    #[serde(default)]
    pub input_per_million: f64,
    /// Dollars per million completion (output) tokens.
    #[serde(default)]
    pub output_per_million: f64,
}

impl Pricing {
    /// The cost in dollars of a call that used `usage`.
    pub fn cost(&self, usage: &Usage) -> f64 {
        (usage.prompt_tokens as f64 * self.input_per_million + usage.completion_tokens as f64 * self.output_per_million)
            / 1_000_000.0
    }
}

/// Configuration of one HTTP model client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpProviderConfig {
    /// The API root, for example `https://api.openai.com/v1` or `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    /// The environment variable holding the API key; none for local servers that need none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// The model used when a request names none.
    pub model: String,
    /// Timeout of one attempt, in seconds (default 120).
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: f64,
    /// Retries after the first attempt for retryable errors (default 3).
    #[serde(default = "default_max_retries")]
    pub max_retries: u32,
    /// Ceiling of concurrent calls (default 16); 429s lower the live limit below it.
    #[serde(default = "default_max_concurrency")]
    pub max_concurrency: usize,
    /// First backoff delay in milliseconds (default 500); doubles on each retry.
    #[serde(default = "default_backoff_ms")]
    pub backoff_ms: u64,
    /// Longest `Retry-After` honoured, in seconds (default 60); longer requests are capped.
    #[serde(default = "default_max_retry_after_secs")]
    pub max_retry_after_secs: f64,
    /// How a JSON Schema is sent.
    #[serde(default)]
    pub structured_output: StructuredOutput,
    /// Prices for cost accounting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pricing: Option<Pricing>,
}

fn default_timeout_secs() -> f64 {
    120.0
}
fn default_max_retries() -> u32 {
    3
}
fn default_max_concurrency() -> usize {
    16
}
fn default_backoff_ms() -> u64 {
    500
}
fn default_max_retry_after_secs() -> f64 {
    60.0
}

impl HttpProviderConfig {
    /// A configuration with the defaults for everything but the URL and the model.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> HttpProviderConfig {
        HttpProviderConfig {
            base_url: base_url.into(),
            api_key_env: None,
            model: model.into(),
            timeout_secs: default_timeout_secs(),
            max_retries: default_max_retries(),
            max_concurrency: default_max_concurrency(),
            backoff_ms: default_backoff_ms(),
            max_retry_after_secs: default_max_retry_after_secs(),
            structured_output: StructuredOutput::default(),
            pricing: None,
        }
    }

    /// The attempt timeout.
    pub fn timeout(&self) -> Duration {
        agentic_core::seconds_to_duration(self.timeout_secs.max(0.001))
    }

    fn validate(&self) -> Result<(), ProviderError> {
        if !(self.base_url.starts_with("http://") || self.base_url.starts_with("https://")) {
            return Err(ProviderError::Config(format!(
                "base URL `{}` must start with http:// or https://",
                self.base_url
            )));
        }
        // A URL without a host (`http://`) or with a port out of range would fail at the first
        // call, as a name that does not resolve or an odd "builder error": said here instead.
        // (An http or https URL that parses has a host.)
        if let Err(error) = reqwest::Url::parse(&self.base_url) {
            return Err(ProviderError::Config(format!(
                "base URL `{}` is not a valid URL ({error}); write one such as http://127.0.0.1:8080/v1",
                self.base_url
            )));
        }
        if !self.timeout_secs.is_finite() || self.timeout_secs <= 0.0 {
            return Err(ProviderError::Config(format!(
                "timeout `{}` must be a positive number of seconds",
                self.timeout_secs
            )));
        }
        Ok(())
    }
}

/// Installs rustls' ring crypto provider once per process. reqwest is built with
/// `rustls-no-provider`, so without this `Client::new` would panic.
pub fn install_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Another part of the process may have installed a provider first; that one is kept.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// A reqwest client for model services (rustls, ring).
pub fn http_client() -> Result<reqwest::Client, ProviderError> {
    install_crypto_provider();
    reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .build()
        .map_err(|error| ProviderError::Config(format!("cannot build the HTTP client: {error}")))
}

/// The state one HTTP model client shares between calls.
#[derive(Debug, Clone)]
pub(crate) struct HttpCore {
    pub(crate) config: HttpProviderConfig,
    pub(crate) client: reqwest::Client,
    pub(crate) api_key: Option<String>,
    pub(crate) limiter: Arc<AdaptiveLimiter>,
}

impl HttpCore {
    pub(crate) fn new(config: HttpProviderConfig) -> Result<HttpCore, ProviderError> {
        config.validate()?;
        let api_key = match &config.api_key_env {
            None => None,
            Some(variable) => match std::env::var(variable) {
                Ok(value) if !value.trim().is_empty() => Some(value),
                _ => {
                    return Err(ProviderError::Config(format!(
                        "environment variable `{variable}` (the API key for {}) is not set; export it or drop `api_key_env`",
                        config.base_url
                    )));
                }
            },
        };
        let limiter = Arc::new(AdaptiveLimiter::new(config.max_concurrency));
        Ok(HttpCore { client: http_client()?, config, api_key, limiter })
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}/{}", self.config.base_url.trim_end_matches('/'), path.trim_start_matches('/'))
    }

    /// Sends `body` to `url` with retries; `headers` are added to every attempt. Returns the
    /// parsed JSON body of a 2xx answer.
    pub(crate) async fn call(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: &Value,
    ) -> Result<Value, ProviderError> {
        let max_retry_after = agentic_core::seconds_to_duration(self.config.max_retry_after_secs);
        let backoff = ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(self.config.backoff_ms))
            .with_max_delay(Duration::from_secs(30))
            .with_max_times(self.config.max_retries as usize)
            .with_jitter();
        let attempt = || async { self.attempt(url, headers, body).await };
        attempt
            .retry(backoff)
            .sleep(tokio::time::sleep)
            .when(ProviderError::is_retryable)
            .adjust(|error, delay| match (error, delay) {
                // Exhausted retries stay exhausted; otherwise the service's wish wins.
                (ProviderError::RateLimited { retry_after: Some(wait) }, Some(_)) => Some((*wait).min(max_retry_after)),
                (_, delay) => delay,
            })
            .notify(|error, delay| tracing::debug!(%error, ?delay, url, "retrying model call"))
            .await
    }

    async fn attempt(&self, url: &str, headers: &[(&str, String)], body: &Value) -> Result<Value, ProviderError> {
        let _permit = self.limiter.acquire().await;
        let timeout = self.config.timeout();
        let mut request = self.client.post(url).timeout(timeout).json(body);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let result = send(request, timeout).await;
        self.limiter.record(match &result {
            Ok(_) => CallOutcome::Success,
            Err(ProviderError::RateLimited { .. }) => CallOutcome::RateLimited,
            Err(_) => CallOutcome::OtherFailure,
        });
        result
    }
}

async fn send(request: reqwest::RequestBuilder, timeout: Duration) -> Result<Value, ProviderError> {
    let response = request.send().await.map_err(|error| map_reqwest_error(error, timeout))?;
    let status = response.status();
    let url = response.url().to_string();
    let retry_after =
        response.headers().get(reqwest::header::RETRY_AFTER).and_then(|v| v.to_str().ok()).and_then(parse_retry_after);
    let text = response.text().await.map_err(|error| map_reqwest_error(error, timeout))?;
    if status.as_u16() == 429 {
        return Err(ProviderError::RateLimited { retry_after });
    }
    if !status.is_success() {
        return Err(ProviderError::Http { url, status: status.as_u16(), body: truncate(&text, 500) });
    }
    serde_json::from_str(&text).map_err(|error| {
        ProviderError::InvalidResponse(format!("body is not JSON ({error}): {}", truncate(&text, 200)))
    })
}

fn map_reqwest_error(error: reqwest::Error, timeout: Duration) -> ProviderError {
    if error.is_timeout() {
        let url = error.url().map_or_else(|| "the model service".to_owned(), ToString::to_string);
        ProviderError::Timeout { after: timeout, url }
    } else if error.is_connect() || error.is_request() {
        ProviderError::Connect(full_chain(&error))
    } else {
        ProviderError::InvalidResponse(full_chain(&error))
    }
}

fn full_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Parses a `Retry-After` value given in seconds (integer or decimal). HTTP dates are not
/// honoured; the regular backoff applies then.
pub(crate) fn parse_retry_after(value: &str) -> Option<Duration> {
    let seconds: f64 = value.trim().parse().ok()?;
    // A wait too long for a `Duration` (`1e20`) is the longest one; the cap applies after.
    (seconds.is_finite() && seconds >= 0.0).then(|| agentic_core::seconds_to_duration(seconds))
}

pub(crate) fn truncate(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        text.to_owned()
    } else {
        let mut out: String = text.chars().take(max_chars).collect();
        out.push('…');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_seconds_parse() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after(" 0.25 "), Some(Duration::from_millis(250)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse_retry_after("-1"), None);
        // Beyond what a `Duration` holds: the longest wait (capped by the caller), not a panic.
        assert_eq!(parse_retry_after("1e20"), Some(Duration::MAX));
        assert_eq!(parse_retry_after("inf"), None);
        let config = HttpProviderConfig { timeout_secs: 1e30, ..HttpProviderConfig::new("http://127.0.0.1:1/v1", "m") };
        assert_eq!(config.timeout(), Duration::MAX);
    }

    #[test]
    fn pricing_cost_per_million() {
        let pricing = Pricing { input_per_million: 2.0, output_per_million: 8.0 };
        let cost = pricing.cost(&Usage { prompt_tokens: 1_000, completion_tokens: 500 });
        assert!((cost - 0.006).abs() < 1e-12, "{cost}");
    }

    #[test]
    fn missing_key_variable_is_a_config_error_naming_it() {
        let mut config = HttpProviderConfig::new("http://127.0.0.1:1/v1", "m");
        config.api_key_env = Some("AGENTIC_TEST_SURELY_UNSET_KEY".into());
        let error = HttpCore::new(config).unwrap_err();
        assert!(error.to_string().contains("`AGENTIC_TEST_SURELY_UNSET_KEY`"), "{error}");
    }

    #[test]
    fn bad_base_url_is_rejected() {
        let error = HttpCore::new(HttpProviderConfig::new("127.0.0.1:8080", "m")).unwrap_err();
        assert!(error.to_string().contains("http://"), "{error}");
    }
}
