//! Integration tests of agentic-adapters: the model clients against a real HTTP server on
//! 127.0.0.1 (`provider::testing::TestServer`).

mod http_clients;
