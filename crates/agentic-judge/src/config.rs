//! Judge configuration: which models judge, how (temperature, samples, pairwise policy), and
//! the calibration bar. Loaded from YAML (`examples/judge/judge.yaml`) or built in code.

use std::path::Path;
use std::sync::Arc;

use agentic_adapters::{
    AdaptiveLimiter, Anthropic, HttpProviderConfig, ModelProvider, OpenAiCompatible, Pricing, StructuredOutput,
};
use serde::{Deserialize, Serialize};

use crate::error::JudgeError;

/// Highest temperature the protocol accepts unless `allow_high_temperature` is set.
pub const MAX_DEFAULT_TEMPERATURE: f64 = 0.1;

/// The wire protocol of one judge model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// OpenAI-compatible `/chat/completions` (OpenAI, vLLM, Ollama, llama.cpp, LiteLLM).
    #[default]
    Openai,
    /// Anthropic Messages API.
    Anthropic,
}

/// One judge model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeModelConfig {
    /// A short name for reports, for example `gpt-judge`.
    pub name: String,
    /// Wire protocol.
    #[serde(default)]
    pub provider: ProviderKind,
    /// API root, for example `https://api.openai.com/v1`.
    pub base_url: String,
    /// The model name the service knows.
    pub model: String,
    /// A version label of the judge (a model snapshot or date); part of the cache key, so a
    /// new version never reuses an old verdict.
    #[serde(default = "default_version")]
    pub version: String,
    /// Environment variable holding the API key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Attempt timeout in seconds (default 120).
    #[serde(default = "default_timeout")]
    pub timeout_secs: f64,
    /// Retries for retryable errors (default 3).
    #[serde(default = "default_retries")]
    pub max_retries: u32,
    /// How the JSON Schema is sent (`json_schema`, `json_object`, `none`).
    #[serde(default)]
    pub structured_output: StructuredOutput,
    /// Prices, for judge cost accounting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pricing: Option<Pricing>,
    /// Most tokens per reply (default 512).
    #[serde(default = "default_max_tokens")]
    pub max_tokens: u32,
}

fn default_version() -> String {
    "unversioned".into()
}
fn default_timeout() -> f64 {
    120.0
}
fn default_retries() -> u32 {
    3
}
fn default_max_tokens() -> u32 {
    512
}

impl JudgeModelConfig {
    /// An OpenAI-compatible judge at `base_url` with defaults for the rest.
    pub fn openai(name: impl Into<String>, base_url: impl Into<String>, model: impl Into<String>) -> JudgeModelConfig {
        JudgeModelConfig {
            name: name.into(),
            provider: ProviderKind::Openai,
            base_url: base_url.into(),
            model: model.into(),
            version: default_version(),
            api_key_env: None,
            timeout_secs: default_timeout(),
            max_retries: default_retries(),
            structured_output: StructuredOutput::JsonSchema,
            pricing: None,
            max_tokens: default_max_tokens(),
        }
    }

    /// The HTTP client configuration for this judge.
    pub fn http_config(&self, max_concurrency: usize) -> HttpProviderConfig {
        let mut config = HttpProviderConfig::new(self.base_url.clone(), self.model.clone());
        config.api_key_env = self.api_key_env.clone();
        config.timeout_secs = self.timeout_secs;
        config.max_retries = self.max_retries;
        config.max_concurrency = max_concurrency;
        config.structured_output = self.structured_output;
        config.pricing = self.pricing;
        config
    }

    /// Builds the client, sharing `limiter` (the global concurrency limit).
    pub fn client(&self, limiter: Arc<AdaptiveLimiter>) -> Result<Arc<dyn ModelProvider>, JudgeError> {
        let config = self.http_config(limiter.max());
        let client: Arc<dyn ModelProvider> = match self.provider {
            ProviderKind::Openai => Arc::new(OpenAiCompatible::new(config)?.with_limiter(limiter)),
            ProviderKind::Anthropic => Arc::new(Anthropic::new(config)?.with_limiter(limiter)),
        };
        Ok(client)
    }
}

/// How several samples (or several judges) are combined into one score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Aggregation {
    /// The arithmetic mean.
    #[default]
    Mean,
    /// The most frequent score; the median breaks a tie.
    Majority,
}

/// What a pairwise comparison does when the two orders disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DisagreementPolicy {
    /// Record a tie.
    #[default]
    Tie,
    /// Judge both orders again (up to `max_reruns`), then record a tie if they still disagree.
    Rerun,
}

/// The whole judge configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeConfig {
    /// The judge models; with several, their verdicts are combined by majority vote.
    pub judges: Vec<JudgeModelConfig>,
    /// Sampling temperature (default 0.0; at most 0.1 unless `allow_high_temperature`).
    #[serde(default)]
    pub temperature: f64,
    /// Accept a temperature above 0.1.
    #[serde(default)]
    pub allow_high_temperature: bool,
    /// Samples per judge and criterion (default 1).
    #[serde(default = "one")]
    pub sampling_count: u32,
    /// How samples are combined (default `mean`).
    #[serde(default)]
    pub aggregation: Aggregation,
    /// The seed for order randomization and sampling; a fresh one is drawn (and recorded)
    /// when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Judge pairwise comparisons in both orders (default true).
    #[serde(default = "yes")]
    pub swap_order: bool,
    /// What an order disagreement becomes (default `tie`).
    #[serde(default)]
    pub on_disagreement: DisagreementPolicy,
    /// Reruns allowed by the `rerun` policy (default 1).
    #[serde(default = "one")]
    pub max_reruns: u32,
    /// Score a padded copy of each candidate too and flag a judge that rewards the padding.
    #[serde(default)]
    pub anti_verbosity: bool,
    /// Agreement a judge must reach on the golden set (default 0.9).
    #[serde(default = "default_bar")]
    pub calibration_bar: f64,
    /// Global ceiling of concurrent judge calls (default 16).
    #[serde(default = "default_concurrency")]
    pub max_concurrency: usize,
    /// Position-bias rate above which a warning is raised (default 0.10).
    #[serde(default = "default_bias_warning")]
    pub position_bias_warning: f64,
}

fn one() -> u32 {
    1
}
fn yes() -> bool {
    true
}
fn default_bar() -> f64 {
    0.9
}
fn default_concurrency() -> usize {
    16
}
fn default_bias_warning() -> f64 {
    0.10
}

impl JudgeConfig {
    /// A configuration with one judge and every default.
    pub fn single(judge: JudgeModelConfig) -> JudgeConfig {
        JudgeConfig {
            judges: vec![judge],
            temperature: 0.0,
            allow_high_temperature: false,
            sampling_count: 1,
            aggregation: Aggregation::Mean,
            seed: None,
            swap_order: true,
            on_disagreement: DisagreementPolicy::Tie,
            max_reruns: 1,
            anti_verbosity: false,
            calibration_bar: default_bar(),
            max_concurrency: default_concurrency(),
            position_bias_warning: default_bias_warning(),
        }
    }

    /// Reads a YAML (or JSON) configuration file.
    pub fn load(path: &Path) -> Result<JudgeConfig, JudgeError> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| JudgeError::Io { path: path.display().to_string(), message: error.to_string() })?;
        let config: JudgeConfig = crate::golden::parse_yaml(&text, path)?;
        config.validate().map_err(|message| JudgeError::Config { path: path.display().to_string(), message })?;
        Ok(config)
    }

    /// Checks the values; the message names the field and what to do.
    pub fn validate(&self) -> Result<(), String> {
        if self.judges.is_empty() {
            return Err("`judges` is empty; add at least one judge model".into());
        }
        if !(self.temperature.is_finite() && self.temperature >= 0.0) {
            return Err(format!("`temperature` is `{}`; use a number >= 0", self.temperature));
        }
        if self.temperature > MAX_DEFAULT_TEMPERATURE && !self.allow_high_temperature {
            return Err(format!(
                "`temperature` is `{}`, above the judge limit {MAX_DEFAULT_TEMPERATURE}; lower it or set `allow_high_temperature: true`",
                self.temperature
            ));
        }
        if self.sampling_count == 0 {
            return Err("`sampling_count` is 0; use 1 or more".into());
        }
        if !(0.0..=1.0).contains(&self.calibration_bar) {
            return Err(format!("`calibration_bar` is `{}`; use a fraction in 0..1", self.calibration_bar));
        }
        let mut names = std::collections::BTreeSet::new();
        for judge in &self.judges {
            if !names.insert(judge.name.as_str()) {
                return Err(format!("judge name `{}` is used twice; give each judge a unique `name`", judge.name));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn high_temperature_is_refused_unless_allowed() {
        let mut config = JudgeConfig::single(JudgeModelConfig::openai("j", "http://127.0.0.1:1/v1", "m"));
        config.temperature = 0.7;
        let message = config.validate().unwrap_err();
        assert!(message.contains("`temperature`") && message.contains("allow_high_temperature"), "{message}");
        config.allow_high_temperature = true;
        assert!(config.validate().is_ok());
    }

    #[test]
    fn yaml_defaults_apply() {
        let config: JudgeConfig = serde_json::from_value(serde_json::json!({
            "judges": [{"name": "a", "base_url": "http://127.0.0.1:1/v1", "model": "m"}]
        }))
        .unwrap();
        assert_eq!(config.temperature, 0.0);
        assert!(config.swap_order);
        assert_eq!(config.calibration_bar, 0.9);
        assert_eq!(config.sampling_count, 1);
    }
}
