//! The OpenAI-compatible and Anthropic clients over real HTTP: replies, broken JSON, 429 with
//! `Retry-After`, 500, hangs, API keys and adaptive concurrency.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentic_adapters::provider::testing::{Reply, TestServer};
use agentic_adapters::{
    AdaptiveLimiter, Anthropic, ChatMessage, ChatRequest, HttpProviderConfig, ModelProvider, OpenAiCompatible,
    ProviderError, Role,
};
use serde_json::json;

fn config(server: &TestServer) -> HttpProviderConfig {
    let mut config = HttpProviderConfig::new(server.base_url(), "test-judge");
    config.timeout_secs = 5.0;
    config.max_retries = 3;
    config.backoff_ms = 10;
    config
}

fn request() -> ChatRequest {
    ChatRequest {
        model: String::new(),
        messages: vec![ChatMessage::new(Role::System, "grade it"), ChatMessage::new(Role::User, "the answer")],
        temperature: Some(0.0),
        max_tokens: Some(64),
        response_schema: Some(json!({"type": "object", "properties": {"score": {"type": "integer"}}})),
        seed: Some(42),
    }
}

#[tokio::test]
async fn openai_client_sends_the_wire_format_and_reads_the_reply() {
    let server = TestServer::start(|_| Reply::chat(r#"{"score": 4}"#)).await.unwrap();
    let client = OpenAiCompatible::new(config(&server)).unwrap();
    let response = client.chat("judge:correctness", &request()).await.unwrap();
    assert_eq!(response.content, r#"{"score": 4}"#);
    assert_eq!(response.model, "test-judge");
    assert_eq!(response.usage.prompt_tokens, 100);
    assert_eq!(response.finish_reason.as_deref(), Some("stop"));
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.body["model"], "test-judge");
    assert_eq!(sent.body["temperature"], 0.0);
    assert_eq!(sent.body["seed"], 42);
    assert_eq!(sent.body["messages"][0], json!({"role": "system", "content": "grade it"}));
    assert_eq!(sent.body["response_format"]["type"], "json_schema");
    assert!(sent.header("authorization").is_none(), "no key configured, none sent");
}

#[tokio::test]
async fn openai_client_sends_the_api_key_from_the_named_variable() {
    let server = TestServer::start(|_| Reply::chat("ok")).await.unwrap();
    let mut config = config(&server);
    // A variable every test process has; its value is what must arrive as the bearer token.
    config.api_key_env = Some("CARGO_PKG_NAME".into());
    let client = OpenAiCompatible::new(config).unwrap();
    client.chat("step", &request()).await.unwrap();
    assert_eq!(server.requests()[0].header("authorization"), Some("Bearer agentic-adapters"));
}

#[tokio::test]
async fn rate_limit_is_retried_after_the_retry_after_delay() {
    let server =
        TestServer::start(|request| if request.index == 0 { Reply::rate_limited(0.4) } else { Reply::chat("fine") })
            .await
            .unwrap();
    let client = OpenAiCompatible::new(config(&server)).unwrap();
    let started = Instant::now();
    let response = client.chat("step", &request()).await.unwrap();
    let elapsed = started.elapsed();
    assert_eq!(response.content, "fine");
    assert_eq!(server.request_count(), 2);
    // The backoff alone would wait about 10 ms; Retry-After asked for 400 ms.
    assert!(elapsed >= Duration::from_millis(390), "waited only {elapsed:?}");
    assert!(elapsed < Duration::from_secs(3), "waited {elapsed:?}");
    assert_eq!(client.limiter().snapshot().cuts, 1, "the 429 cut the concurrency limit");
}

#[tokio::test]
async fn persistent_rate_limit_gives_up_after_max_retries() {
    let server = TestServer::start(|_| Reply::rate_limited(0.01)).await.unwrap();
    let mut config = config(&server);
    config.max_retries = 2;
    let client = OpenAiCompatible::new(config).unwrap();
    let error = client.chat("step", &request()).await.unwrap_err();
    assert!(matches!(error, ProviderError::RateLimited { retry_after: Some(_) }), "{error:?}");
    assert_eq!(server.request_count(), 3, "one attempt and two retries");
}

#[tokio::test]
async fn server_error_is_retried_then_succeeds() {
    let server =
        TestServer::start(|request| if request.index < 2 { Reply::status(500) } else { Reply::chat("recovered") })
            .await
            .unwrap();
    let client = OpenAiCompatible::new(config(&server)).unwrap();
    assert_eq!(client.chat("step", &request()).await.unwrap().content, "recovered");
    assert_eq!(server.request_count(), 3);
}

#[tokio::test]
async fn client_error_is_not_retried() {
    let server = TestServer::start(|_| Reply::status(400)).await.unwrap();
    let client = OpenAiCompatible::new(config(&server)).unwrap();
    let error = client.chat("step", &request()).await.unwrap_err();
    assert!(matches!(error, ProviderError::Http { status: 400, .. }), "{error:?}");
    // The URL posted to is named (a base URL without `/v1` shows there).
    assert!(
        error.to_string().contains(&format!("{}/chat/completions answered HTTP 400", server.base_url())),
        "{error}"
    );
    assert_eq!(server.request_count(), 1);
}

/// A status that says the URL serves no such route (a base URL without `/v1`) says to check
/// the base URL; other statuses do not.
#[tokio::test]
async fn a_missing_route_points_to_the_base_url() {
    for (status, hinted) in [(404, true), (501, true), (400, false)] {
        let server = TestServer::start(move |_| Reply::status(status)).await.unwrap();
        let error = OpenAiCompatible::new(config(&server)).unwrap().chat("step", &request()).await.unwrap_err();
        assert_eq!(error.to_string().contains("check the base URL"), hinted, "{status}: {error}");
    }
}

#[tokio::test]
async fn invalid_json_body_is_an_invalid_response() {
    let server =
        TestServer::start(|_| Reply::Raw { status: 200, headers: Vec::new(), body: "{not json".into() }).await.unwrap();
    let client = OpenAiCompatible::new(config(&server)).unwrap();
    let error = client.chat("step", &request()).await.unwrap_err();
    assert!(matches!(error, ProviderError::InvalidResponse(_)), "{error:?}");
    assert_eq!(server.request_count(), 1, "a malformed body is not retried");
}

#[tokio::test]
async fn hanging_server_times_out_and_each_attempt_is_bounded() {
    let server = TestServer::start(|_| Reply::Hang).await.unwrap();
    let mut config = config(&server);
    config.timeout_secs = 0.2;
    config.max_retries = 1;
    let client = OpenAiCompatible::new(config).unwrap();
    let started = Instant::now();
    let error = client.chat("step", &request()).await.unwrap_err();
    assert!(matches!(error, ProviderError::Timeout { .. }), "{error:?}");
    assert!(error.to_string().contains("timed out"), "{error}");
    // The URL called is named, as for an HTTP error.
    assert!(error.to_string().contains(&format!("{}/chat/completions", server.base_url())), "{error}");
    assert_eq!(server.request_count(), 2);
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
}

#[tokio::test]
async fn unreachable_server_is_a_connect_error() {
    // Bind then drop a listener, so the port is (almost surely) closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut config = HttpProviderConfig::new(format!("http://127.0.0.1:{port}/v1"), "m");
    config.max_retries = 0;
    let client = OpenAiCompatible::new(config).unwrap();
    let error = client.chat("step", &request()).await.unwrap_err();
    assert!(matches!(error, ProviderError::Connect(_)), "{error:?}");
}

#[tokio::test]
async fn concurrency_never_exceeds_the_shared_limit() {
    let server = TestServer::start(|_| Reply::chat("ok").after(Duration::from_millis(30))).await.unwrap();
    let limiter = Arc::new(AdaptiveLimiter::new(4));
    // Two clients sharing one limiter: together they stay under it.
    let first = Arc::new(OpenAiCompatible::new(config(&server)).unwrap().with_limiter(limiter.clone()));
    let second = Arc::new(Anthropic::new(config(&server)).unwrap().with_limiter(limiter.clone()));
    let mut tasks = Vec::new();
    for call in 0..24 {
        let client: Arc<dyn ModelProvider> = if call % 2 == 0 { first.clone() } else { second.clone() };
        tasks.push(tokio::spawn(async move { client.chat("step", &request()).await.map(|_| ()) }));
    }
    for task in tasks {
        // The Anthropic client reads an OpenAI body as an empty text reply; only the HTTP load matters here.
        let _ = task.await.unwrap();
    }
    assert_eq!(server.request_count(), 24);
    assert!(server.peak_concurrency() <= 4, "peak {}", server.peak_concurrency());
    assert!(server.peak_concurrency() >= 2, "calls did run concurrently: peak {}", server.peak_concurrency());
    assert_eq!(limiter.snapshot().in_flight, 0);
}

#[tokio::test]
async fn anthropic_client_speaks_the_messages_api() {
    let server = TestServer::start(|_| Reply::anthropic(r#"{"score": 5}"#)).await.unwrap();
    let mut config = config(&server);
    config.api_key_env = Some("CARGO_PKG_NAME".into());
    let client = Anthropic::new(config).unwrap();
    let mut request = request();
    request.response_schema = None;
    let response = client.chat("judge", &request).await.unwrap();
    assert_eq!(response.content, r#"{"score": 5}"#);
    assert_eq!(response.usage.prompt_tokens, 20);
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some("agentic-adapters"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.body["system"], "grade it");
    assert_eq!(sent.body["messages"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn anthropic_client_retries_rate_limits_too() {
    let server = TestServer::start(
        |request| if request.index == 0 { Reply::rate_limited(0.05) } else { Reply::anthropic("ok") },
    )
    .await
    .unwrap();
    let client = Anthropic::new(config(&server)).unwrap();
    assert_eq!(client.chat("judge", &request()).await.unwrap().content, "ok");
    assert_eq!(server.request_count(), 2);
}

/// A base URL that could never be called is refused when the client is built, naming it: no
/// host, a port out of range, another scheme.
#[tokio::test]
async fn base_urls_that_cannot_be_called_are_refused_up_front() {
    let server = TestServer::start(|_| Reply::status(200)).await.unwrap();
    for (url, said) in [
        ("http://", "empty host"),
        ("http://127.0.0.1:99999/v1", "invalid port number"),
        ("ftp://127.0.0.1/v1", "must start with http:// or https://"),
    ] {
        let mut config = config(&server);
        config.base_url = url.to_owned();
        let Err(error) = OpenAiCompatible::new(config) else { panic!("{url} was accepted") };
        assert!(error.to_string().contains(said) && error.to_string().contains(url), "{url}: {error}");
    }
}
