//! Adapter traits (agent, tool, workflow, trace), model providers and trace-format ingest.
//!
//! **API Boundary:** third-party agent frameworks and model services integrate here and
//! nowhere else. The provider port is in `provider`; adapters, clients and trace ingest come with the engine,
//! judge and compliance issues.

pub mod agent;
pub mod provider;
pub mod replay;
pub mod sink;
pub mod tool;
pub mod trace;
pub mod workflow;

pub use provider::{
    AdaptiveLimiter, Anthropic, ChatMessage, ChatRequest, ChatResponse, HttpProviderConfig, ModelProvider,
    OpenAiCompatible, Pricing, ProviderError, Role, StructuredOutput, Usage, WIRE_SEED_MASK,
};

pub use agent::{AgentAdapter, AgentError, AgentRequest, AgentResponse, AgentSettings, ProviderAgent};
pub use replay::{CassetteEntry, CassetteError, RecordingProvider, ReplayProvider, load_cassette, request_key};
pub use sink::{ChannelSink, EventSink, JsonlSink, MemorySink, NullSink};
pub use tool::{BuiltinTools, ToolAdapter, ToolCall, ToolError, ToolRegistry, ToolResult};
pub use workflow::{WorkflowAdapter, WorkflowError};
