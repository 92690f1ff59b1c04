//! Draining: what a server does between its shutdown signal and its exit.
//! From the moment it starts, no connection is accepted, `/readyz` answers
//! `draining`, WebSockets are closed with 1001 and the jobs stop after their
//! current unit of work, while requests in flight finish
//! (`server::connections` bounds them by the grace period).

use std::future::Future;

use tokio::sync::watch;

/// Whether the server is draining; every clone sees the same state.
#[derive(Debug, Clone, Default)]
pub struct Draining(watch::Sender<bool>);

impl Draining {
    /// Starts draining; later calls change nothing.
    pub fn start(&self) {
        self.0.send_replace(true);
    }

    pub fn is_draining(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once draining has started.
    pub fn started(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut draining = self.watch();
        async move {
            // Also ends once every `Draining` is dropped: nothing is served then.
            let _ = draining.wait_for(|draining| *draining).await;
        }
    }

    /// The state as a plain watch, for code that does not know the server
    /// (the jobs).
    pub fn watch(&self) -> watch::Receiver<bool> {
        self.0.subscribe()
    }
}
