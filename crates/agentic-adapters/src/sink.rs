//! The emitting side of canonical events: [`EventSink`] and a few sinks.
//!
//! The seed's `TraceAdapter.emit(event)` (ticket P1-T001) is [`EventSink::emit`] here: the
//! engine and the adapters emit canonical events into sinks. The ingest side, which turns
//! foreign trace formats into canonical events, is the `trace` module's `TraceAdapter`.
//!
//! Sinks are synchronous and cheap: emitting happens on the engine's hot path. A sink that
//! does slow work (network, big files) should hand events to a task through
//! [`ChannelSink`].

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use agentic_core::CanonicalEvent;
use tokio::sync::mpsc;

/// Receives canonical events.
pub trait EventSink: Send + Sync {
    /// Takes one event. Must not block for long and must not panic.
    fn emit(&self, event: &CanonicalEvent);

    /// Writes out anything buffered. Called at the end of a run.
    fn flush(&self) {}
}

/// Drops every event.
#[derive(Debug, Default, Clone, Copy)]
pub struct NullSink;

impl EventSink for NullSink {
    fn emit(&self, _event: &CanonicalEvent) {}
}

/// Keeps every event in memory (tests, small runs).
#[derive(Debug, Default)]
pub struct MemorySink {
    events: Mutex<Vec<CanonicalEvent>>,
}

impl MemorySink {
    /// A copy of the events received so far, in order.
    pub fn events(&self) -> Vec<CanonicalEvent> {
        self.events.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
}

impl EventSink for MemorySink {
    fn emit(&self, event: &CanonicalEvent) {
        self.events.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(event.clone());
    }
}

/// Sends every event to a tokio channel (progress bars, SSE, slow consumers).
#[derive(Debug, Clone)]
pub struct ChannelSink {
    sender: mpsc::UnboundedSender<CanonicalEvent>,
}

impl ChannelSink {
    /// A sink and the receiver of its events.
    pub fn new() -> (ChannelSink, mpsc::UnboundedReceiver<CanonicalEvent>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        (ChannelSink { sender }, receiver)
    }
}

impl EventSink for ChannelSink {
    fn emit(&self, event: &CanonicalEvent) {
        // A closed receiver means nobody listens any more; that is not an error.
        let _ = self.sender.send(event.clone());
    }
}

/// Appends every event as one JSON line to a file (`runs/<run_id>/events.jsonl`).
#[derive(Debug)]
pub struct JsonlSink {
    path: PathBuf,
    writer: Mutex<Option<BufWriter<File>>>,
}

impl JsonlSink {
    /// Creates (or truncates) `path`.
    pub fn create(path: &Path) -> std::io::Result<JsonlSink> {
        let file = File::create(path)?;
        Ok(JsonlSink { path: path.to_owned(), writer: Mutex::new(Some(BufWriter::new(file))) })
    }

    /// The file written.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl EventSink for JsonlSink {
    fn emit(&self, event: &CanonicalEvent) {
        let mut guard = self.writer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(writer) = guard.as_mut() {
            let written = serde_json::to_writer(&mut *writer, event).is_ok() && writer.write_all(b"\n").is_ok();
            if !written {
                // A full disk must not take the run down; stop writing and keep running.
                *guard = None;
            }
        }
    }

    fn flush(&self) {
        let mut guard = self.writer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(writer) = guard.as_mut()
            && writer.flush().is_err()
        {
            *guard = None;
        }
    }
}

impl Drop for JsonlSink {
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use agentic_core::EventType;

    use super::*;

    fn event(seq: u64) -> CanonicalEvent {
        let mut event = CanonicalEvent::new(EventType::StepStart, chrono::Utc::now()).with_step("a");
        event.seq = seq;
        event
    }

    #[test]
    fn jsonl_sink_writes_one_line_per_event() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let sink = JsonlSink::create(&path).unwrap();
        sink.emit(&event(1));
        sink.emit(&event(2));
        sink.flush();
        let text = std::fs::read_to_string(&path).unwrap();
        let events: Vec<CanonicalEvent> = text.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
        assert_eq!(events.iter().map(|event| event.seq).collect::<Vec<_>>(), vec![1, 2]);
    }

    #[tokio::test]
    async fn channel_sink_delivers_in_order() {
        let (sink, mut receiver) = ChannelSink::new();
        sink.emit(&event(1));
        sink.emit(&event(2));
        drop(sink);
        assert_eq!(receiver.recv().await.unwrap().seq, 1);
        assert_eq!(receiver.recv().await.unwrap().seq, 2);
        assert!(receiver.recv().await.is_none());
    }
}
