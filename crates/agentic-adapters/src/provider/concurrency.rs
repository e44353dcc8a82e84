//! Adaptive concurrency for model calls: a limit that is cut when the service answers 429
//! and grows back on success, never above a global ceiling.
//!
//! This is the additive-increase / multiplicative-decrease scheme Inspect AI and promptfoo use
//! against rate-limited services: a 429 halves the limit; every `limit` successes in a row
//! add one. One [`AdaptiveLimiter`] can be shared (in an `Arc`) by several clients so that a
//! set of judge models stays under one global limit.

use std::sync::Mutex;

use tokio::sync::Notify;

/// A concurrency limit that adapts to rate limiting.
#[derive(Debug)]
pub struct AdaptiveLimiter {
    state: Mutex<LimiterState>,
    notify: Notify,
    max: usize,
    min: usize,
}

#[derive(Debug)]
struct LimiterState {
    limit: usize,
    in_flight: usize,
    successes: usize,
    cuts: u64,
}

/// A figure of the limiter's state, for reports and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimiterSnapshot {
    /// The current limit.
    pub limit: usize,
    /// Calls running now.
    pub in_flight: usize,
    /// How many times a 429 cut the limit.
    pub cuts: u64,
}

/// What happened to one call, fed back to the limiter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    /// The service answered.
    Success,
    /// The service answered 429.
    RateLimited,
    /// Any other failure; the limit is left alone.
    OtherFailure,
}

impl AdaptiveLimiter {
    /// A limiter that starts at `max` concurrent calls (at least 1) and never goes above it.
    pub fn new(max: usize) -> AdaptiveLimiter {
        let max = max.max(1);
        AdaptiveLimiter {
            state: Mutex::new(LimiterState { limit: max, in_flight: 0, successes: 0, cuts: 0 }),
            notify: Notify::new(),
            max,
            min: 1,
        }
    }

    /// The ceiling.
    pub fn max(&self) -> usize {
        self.max
    }

    /// The current state.
    pub fn snapshot(&self) -> LimiterSnapshot {
        let state = self.lock();
        LimiterSnapshot { limit: state.limit, in_flight: state.in_flight, cuts: state.cuts }
    }

    /// Waits for a free slot. The slot is given back when the permit drops.
    pub async fn acquire(&self) -> LimiterPermit<'_> {
        loop {
            // Created before the check, so a release between the check and the await is not lost.
            let notified = self.notify.notified();
            {
                let mut state = self.lock();
                if state.in_flight < state.limit {
                    state.in_flight += 1;
                    return LimiterPermit { limiter: self };
                }
            }
            notified.await;
        }
    }

    /// Feeds back the outcome of one call.
    pub fn record(&self, outcome: CallOutcome) {
        let mut state = self.lock();
        match outcome {
            CallOutcome::Success => {
                state.successes += 1;
                if state.successes >= state.limit && state.limit < self.max {
                    state.limit += 1;
                    state.successes = 0;
                    drop(state);
                    self.notify.notify_waiters();
                }
            }
            CallOutcome::RateLimited => {
                state.limit = (state.limit / 2).max(self.min);
                state.successes = 0;
                state.cuts += 1;
            }
            CallOutcome::OtherFailure => {}
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LimiterState> {
        // A poisoned lock only means another thread panicked while holding it; the counters are
        // still consistent (every update is a single assignment), so carry on.
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A slot taken from an [`AdaptiveLimiter`].
#[derive(Debug)]
pub struct LimiterPermit<'a> {
    limiter: &'a AdaptiveLimiter,
}

impl Drop for LimiterPermit<'_> {
    fn drop(&mut self) {
        {
            let mut state = self.limiter.lock();
            state.in_flight = state.in_flight.saturating_sub(1);
        }
        self.limiter.notify.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    #[test]
    fn rate_limit_halves_and_success_grows_back() {
        let limiter = AdaptiveLimiter::new(8);
        limiter.record(CallOutcome::RateLimited);
        assert_eq!(limiter.snapshot().limit, 4);
        limiter.record(CallOutcome::RateLimited);
        limiter.record(CallOutcome::RateLimited);
        limiter.record(CallOutcome::RateLimited);
        assert_eq!(limiter.snapshot().limit, 1, "never below one");
        for _ in 0..1 {
            limiter.record(CallOutcome::Success);
        }
        assert_eq!(limiter.snapshot().limit, 2);
        for _ in 0..2 {
            limiter.record(CallOutcome::Success);
        }
        assert_eq!(limiter.snapshot().limit, 3);
        for _ in 0..100 {
            limiter.record(CallOutcome::Success);
        }
        assert_eq!(limiter.snapshot().limit, 8, "never above the ceiling");
        assert_eq!(limiter.snapshot().cuts, 4);
    }

    #[tokio::test]
    async fn acquire_waits_for_a_free_slot() {
        let limiter = Arc::new(AdaptiveLimiter::new(2));
        let first = limiter.acquire().await;
        let _second = limiter.acquire().await;
        let waiter = {
            let limiter = limiter.clone();
            tokio::spawn(async move {
                let _third = limiter.acquire().await;
            })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiter.is_finished(), "a third call must wait while two run");
        drop(first);
        tokio::time::timeout(Duration::from_secs(5), waiter).await.expect("released slot is handed on").unwrap();
    }
}
