//! [`CancelToken`]: a cheap, cloneable signal that a run should stop.
//!
//! The engine stops starting steps once it fires; running steps see it too: agent and tool
//! calls are dropped, and the command runner kills the step's whole process group.

use std::sync::Arc;

use tokio::sync::watch;

/// Cancels a run when [`CancelToken::cancel`] is called on any clone.
#[derive(Debug, Clone)]
pub struct CancelToken {
    sender: Arc<watch::Sender<bool>>,
}

impl Default for CancelToken {
    fn default() -> Self {
        CancelToken::new()
    }
}

impl CancelToken {
    /// A token that has not fired.
    pub fn new() -> CancelToken {
        let (sender, _) = watch::channel(false);
        CancelToken { sender: Arc::new(sender) }
    }

    /// Fires the token; every clone sees it. Calling it again does nothing.
    pub fn cancel(&self) {
        self.sender.send_replace(true);
    }

    /// Whether the token has fired.
    pub fn is_cancelled(&self) -> bool {
        *self.sender.borrow()
    }

    /// Completes once the token fires (at once when it already has).
    pub async fn cancelled(&self) {
        let mut receiver = self.sender.subscribe();
        // The sender lives as long as `self`, so `wait_for` cannot fail.
        let _ = receiver.wait_for(|cancelled| *cancelled).await;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn clones_see_the_cancel() {
        let token = CancelToken::new();
        let clone = token.clone();
        let waiter = tokio::spawn(async move { clone.cancelled().await });
        assert!(!token.is_cancelled());
        tokio::time::sleep(Duration::from_millis(10)).await;
        token.cancel();
        tokio::time::timeout(Duration::from_secs(2), waiter).await.unwrap().unwrap();
        assert!(token.is_cancelled());
        // Already fired: returns at once.
        tokio::time::timeout(Duration::from_millis(100), token.cancelled()).await.unwrap();
    }
}
