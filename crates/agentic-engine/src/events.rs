//! [`EventBus`]: stamps every event of a run with the run id, the attempt and a strictly
//! increasing `seq`, and hands it to every sink in that order.
//!
//! Numbering and delivery happen under one lock, so every sink (the `events.jsonl` file, a
//! progress bar, an SSE stream) sees the events in `seq` order.

use std::sync::{Arc, Mutex, PoisonError};

use agentic_adapters::EventSink;
use agentic_core::CanonicalEvent;

struct BusState {
    seq: u64,
    attempt: Option<u32>,
}

/// The event stream of one run.
pub struct EventBus {
    run_id: String,
    sinks: Vec<Arc<dyn EventSink>>,
    state: Mutex<BusState>,
}

impl EventBus {
    /// A bus for run `run_id` that delivers to `sinks`.
    pub fn new(run_id: impl Into<String>, sinks: Vec<Arc<dyn EventSink>>) -> EventBus {
        EventBus { run_id: run_id.into(), sinks, state: Mutex::new(BusState { seq: 0, attempt: None }) }
    }

    /// The run id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Sets the iterative-repair attempt stamped on later events.
    pub fn set_attempt(&self, attempt: Option<u32>) {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).attempt = attempt;
    }

    /// The last `seq` handed out.
    pub fn last_seq(&self) -> u64 {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).seq
    }

    /// Flushes every sink.
    pub fn flush(&self) {
        for sink in &self.sinks {
            sink.flush();
        }
    }
}

impl EventBus {
    /// Like [`EventBus::publish`], but builds the event only when a sink will see it.
    pub fn publish_with(&self, build: impl FnOnce() -> CanonicalEvent) {
        if self.sinks.is_empty() {
            self.state.lock().unwrap_or_else(PoisonError::into_inner).seq += 1;
            return;
        }
        self.publish(build());
    }

    /// Stamps `event` and delivers it to every sink, without copying it.
    pub fn publish(&self, mut event: CanonicalEvent) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.seq += 1;
        if self.sinks.is_empty() {
            return;
        }
        event.seq = state.seq;
        event.run_id = Some(self.run_id.clone());
        if event.attempt.is_none() {
            event.attempt = state.attempt;
        }
        for sink in &self.sinks {
            sink.emit(&event);
        }
    }
}

impl EventSink for EventBus {
    fn emit(&self, event: &CanonicalEvent) {
        if self.sinks.is_empty() {
            self.state.lock().unwrap_or_else(PoisonError::into_inner).seq += 1;
            return;
        }
        let mut event = event.clone();
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.seq += 1;
        event.seq = state.seq;
        event.run_id = Some(self.run_id.clone());
        if event.attempt.is_none() {
            event.attempt = state.attempt;
        }
        for sink in &self.sinks {
            sink.emit(&event);
        }
    }

    fn flush(&self) {
        EventBus::flush(self);
    }
}

#[cfg(test)]
mod tests {
    use agentic_adapters::MemorySink;
    use agentic_core::EventType;

    use super::*;

    #[test]
    fn seq_is_strictly_increasing_across_threads() {
        let sink = Arc::new(MemorySink::default());
        let bus = Arc::new(EventBus::new("r", vec![sink.clone() as Arc<dyn EventSink>]));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let bus = bus.clone();
                std::thread::spawn(move || {
                    for _ in 0..250 {
                        bus.emit(&CanonicalEvent::new(EventType::Log, chrono::Utc::now()));
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let seqs: Vec<u64> = sink.events().iter().map(|event| event.seq).collect();
        assert_eq!(seqs, (1..=1000).collect::<Vec<u64>>());
        assert!(sink.events().iter().all(|event| event.run_id.as_deref() == Some("r")));
    }
}
