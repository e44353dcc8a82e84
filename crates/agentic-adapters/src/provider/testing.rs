//! A scripted OpenAI-compatible model server on 127.0.0.1 for tests and benchmarks (feature
//! `test-support`).
//!
//! It speaks real HTTP/1.1 over a real TCP socket (keep-alive, `Content-Length` bodies), so
//! the clients under test go through their whole network path. A handler decides each reply:
//! a chat completion, broken JSON, 429 with `Retry-After`, 500, a delay, or a hang. Every
//! request is recorded for assertions. The server stops when the [`TestServer`] is dropped;
//! hung connections are bounded by [`HANG`].

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

/// How long a [`Reply::Hang`] holds a connection before closing it without an answer.
pub const HANG: Duration = Duration::from_secs(30);

/// Largest request accepted (headers and body), so a bad client cannot grow memory unbounded.
const MAX_REQUEST_BYTES: usize = 8 * 1024 * 1024;

/// One request the server received.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// `POST`, `GET`, ...
    pub method: String,
    /// The request path, for example `/v1/chat/completions`.
    pub path: String,
    /// Headers, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON (`Value::Null` when it was not JSON).
    pub body: Value,
    /// 0 for the first request the server saw, 1 for the second, ...
    pub index: usize,
    /// When the request was fully read.
    pub received: std::time::Instant,
}

impl RecordedRequest {
    /// A header's value, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(key, _)| *key == name).map(|(_, value)| value.as_str())
    }

    /// The concatenated text of all messages of a chat request.
    pub fn prompt_text(&self) -> String {
        let mut text = String::new();
        if let Some(system) = self.body.get("system").and_then(Value::as_str) {
            text.push_str(system);
            text.push('\n');
        }
        for message in self.body.get("messages").and_then(Value::as_array).into_iter().flatten() {
            if let Some(content) = message.get("content").and_then(Value::as_str) {
                text.push_str(content);
                text.push('\n');
            }
        }
        text
    }

    /// The content of the last message.
    pub fn last_message(&self) -> String {
        self.body
            .get("messages")
            .and_then(Value::as_array)
            .and_then(|messages| messages.last())
            .and_then(|message| message.get("content"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    }
}

/// What the server answers to one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// An HTTP answer with a JSON body.
    Json {
        /// Status code.
        status: u16,
        /// Extra headers.
        headers: Vec<(String, String)>,
        /// The body.
        body: Value,
    },
    /// An HTTP answer with a raw body (for broken JSON).
    Raw {
        /// Status code.
        status: u16,
        /// Extra headers.
        headers: Vec<(String, String)>,
        /// The body.
        body: String,
    },
    /// Wait, then answer.
    Delayed(Duration, Box<Reply>),
    /// Never answer (the connection is held for [`HANG`], then closed).
    Hang,
}

impl Reply {
    /// A 200 chat completion whose message content is `content`.
    pub fn chat(content: impl Into<String>) -> Reply {
        Reply::Json { status: 200, headers: Vec::new(), body: chat_completion_body(&content.into(), "test-judge") }
    }

    /// A 200 chat completion whose content is `value` serialized.
    pub fn chat_json(value: &Value) -> Reply {
        Reply::chat(value.to_string())
    }

    /// A 200 Anthropic Messages reply whose text is `content`.
    pub fn anthropic(content: impl Into<String>) -> Reply {
        Reply::Json {
            status: 200,
            headers: Vec::new(),
            body: json!({
                "id": "msg_test", "type": "message", "role": "assistant", "model": "test-claude",
                "content": [{"type": "text", "text": content.into()}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 20, "output_tokens": 10}
            }),
        }
    }

    /// 429 with `Retry-After: seconds`.
    pub fn rate_limited(retry_after_secs: f64) -> Reply {
        Reply::Json {
            status: 429,
            headers: vec![("retry-after".into(), format!("{retry_after_secs}"))],
            body: json!({"error": {"message": "rate limited", "type": "rate_limit"}}),
        }
    }

    /// An error status with an OpenAI-style error body.
    pub fn status(status: u16) -> Reply {
        Reply::Json {
            status,
            headers: Vec::new(),
            body: json!({"error": {"message": format!("test status {status}")}}),
        }
    }

    /// This reply after `delay`.
    pub fn after(self, delay: Duration) -> Reply {
        Reply::Delayed(delay, Box::new(self))
    }
}

/// A 200 OpenAI chat-completion body with `content`, and a token count from its length.
pub fn chat_completion_body(content: &str, model: &str) -> Value {
    let completion_tokens = content.len().div_ceil(4) as u64;
    json!({
        "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": completion_tokens, "total_tokens": 100 + completion_tokens}
    })
}

type Handler = dyn Fn(&RecordedRequest) -> Reply + Send + Sync;

/// A running test server.
pub struct TestServer {
    address: std::net::SocketAddr,
    requests: Arc<Mutex<Vec<RecordedRequest>>>,
    load: Arc<Load>,
    accept_task: JoinHandle<()>,
}

/// Requests being answered now, and the most at once.
#[derive(Debug, Default)]
struct Load {
    active: AtomicUsize,
    peak: AtomicUsize,
}

impl std::fmt::Debug for TestServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestServer").field("address", &self.address).finish_non_exhaustive()
    }
}

impl TestServer {
    /// Starts a server on a free port of 127.0.0.1; `handler` picks each reply.
    pub async fn start(
        handler: impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static,
    ) -> std::io::Result<TestServer> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        let requests = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let counter = Arc::new(AtomicUsize::new(0));
        let load = Arc::new(Load::default());
        let accept_task = {
            let requests = requests.clone();
            let load = load.clone();
            tokio::spawn(async move {
                // Owned here, so dropping (aborting) this task aborts every connection too.
                let mut connections = JoinSet::new();
                loop {
                    tokio::select! {
                        accepted = listener.accept() => {
                            let Ok((stream, _)) = accepted else { continue };
                            let _ = stream.set_nodelay(true);
                            connections.spawn(serve_connection(
                                stream,
                                handler.clone(),
                                requests.clone(),
                                counter.clone(),
                                load.clone(),
                            ));
                        }
                        Some(_) = connections.join_next(), if !connections.is_empty() => {}
                    }
                }
            })
        };
        Ok(TestServer { address, requests, load, accept_task })
    }

    /// `http://127.0.0.1:PORT/v1`, the base URL an OpenAI-compatible client wants.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.address)
    }

    /// `http://127.0.0.1:PORT`.
    pub fn root_url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.requests.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// The most requests the server was answering at the same time.
    pub fn peak_concurrency(&self) -> usize {
        self.load.peak.load(Ordering::SeqCst)
    }

    /// How many requests were received so far.
    pub fn request_count(&self) -> usize {
        self.requests.lock().unwrap_or_else(std::sync::PoisonError::into_inner).len()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.accept_task.abort();
    }
}

async fn serve_connection(
    mut stream: TcpStream,
    handler: Arc<Handler>,
    requests: Arc<Mutex<Vec<RecordedRequest>>>,
    counter: Arc<AtomicUsize>,
    load: Arc<Load>,
) {
    let mut buffer = Vec::with_capacity(8192);
    loop {
        let Some((method, path, headers, body)) = read_request(&mut stream, &mut buffer).await else { return };
        let request = RecordedRequest {
            method,
            path,
            headers,
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
            index: counter.fetch_add(1, Ordering::SeqCst),
            received: std::time::Instant::now(),
        };
        requests.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(request.clone());
        let active = load.active.fetch_add(1, Ordering::SeqCst) + 1;
        load.peak.fetch_max(active, Ordering::SeqCst);
        let _active = ActiveGuard(&load);
        let mut reply = if request.path.ends_with("/models") {
            Reply::Json {
                status: 200,
                headers: Vec::new(),
                body: json!({"object": "list", "data": [{"id": "test-judge"}]}),
            }
        } else {
            handler(&request)
        };
        loop {
            match reply {
                Reply::Delayed(delay, inner) => {
                    tokio::time::sleep(delay).await;
                    reply = *inner;
                }
                Reply::Hang => {
                    tokio::time::sleep(HANG).await;
                    return;
                }
                Reply::Json { status, headers, body } => {
                    if write_response(&mut stream, status, &headers, body.to_string().as_bytes()).await.is_err() {
                        return;
                    }
                    break;
                }
                Reply::Raw { status, headers, body } => {
                    if write_response(&mut stream, status, &headers, body.as_bytes()).await.is_err() {
                        return;
                    }
                    break;
                }
            }
        }
    }
}

/// Decrements the active count when a reply is done (or the connection task ends).
struct ActiveGuard<'a>(&'a Load);

impl Drop for ActiveGuard<'_> {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::SeqCst);
    }
}

type ParsedRequest = (String, String, Vec<(String, String)>, Vec<u8>);

/// Reads one request from the connection; `None` when the peer closed it or sent garbage.
async fn read_request(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<ParsedRequest> {
    let header_end = loop {
        if let Some(position) = buffer.windows(4).position(|window| window == b"\r\n\r\n") {
            break position;
        }
        if buffer.len() > MAX_REQUEST_BYTES {
            return None;
        }
        let mut chunk = [0u8; 8192];
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8_lossy(&buffer[..header_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split_whitespace();
    let method = request_line.next()?.to_owned();
    let path = request_line.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    if length > MAX_REQUEST_BYTES {
        return None;
    }
    let body_start = header_end + 4;
    while buffer.len() < body_start + length {
        let mut chunk = [0u8; 8192];
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
    let body = buffer[body_start..body_start + length].to_vec();
    buffer.drain(..body_start + length);
    Some((method, path, headers, body))
}

async fn write_response(
    stream: &mut TcpStream,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    };
    let mut head =
        format!("HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n", body.len());
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    stream.write_all(&bytes).await?;
    stream.flush().await
}
