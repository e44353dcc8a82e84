//! Adapter traits (agent, tool, workflow, trace), model providers and trace-format ingest.
//!
//! **API Boundary:** third-party agent frameworks and model services integrate here and
//! nowhere else. The provider port is in `provider`; adapters, clients and trace ingest come with the engine,
//! judge and compliance issues.

pub mod provider;
pub mod trace;

pub use provider::{
    AdaptiveLimiter, Anthropic, ChatMessage, ChatRequest, ChatResponse, HttpProviderConfig, ModelProvider,
    OpenAiCompatible, Pricing, ProviderError, Role, StructuredOutput, Usage,
};
