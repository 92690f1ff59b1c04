//! Rate windows in process memory: exact for one node; with several replicas
//! each keeps its own.

use std::collections::HashMap;
use std::sync::Mutex;

use uuid::Uuid;

use super::{Counted, Tally, Window};

#[derive(Debug, Default)]
pub(super) struct LocalWindows {
    /// account -> (window minute, requests counted in it)
    windows: Mutex<HashMap<Uuid, (i64, u32)>>,
}

impl LocalWindows {
    pub(super) fn tally(&self, account: Uuid, window: Window, limit: u32, tally: Tally) -> Counted {
        let mut windows = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        let counted = windows.entry(account).or_insert((window.minute, 0));
        if counted.0 != window.minute {
            *counted = (window.minute, 0);
        }
        let used = &mut counted.1;
        let allowed = match tally {
            Tally::Count(units) => used.saturating_add(units) <= limit,
            Tally::Peek => *used < limit,
        };
        if let (true, Tally::Count(units)) = (allowed, tally) {
            *used += units;
        }
        Counted {
            allowed,
            used: counted.1,
        }
    }
}
