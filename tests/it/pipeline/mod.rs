//! The write side: extension uploads, the merge pass, session completion into
//! the outbox, snapshots and retention. Jobs are driven directly with the
//! test clock.
//!
//! This module holds the merge-pass drivers the others share; `uploads`
//! tests the upload endpoint, `merge_pass` what merging makes of items,
//! `jobs` completion, snapshots and retention, `live` session progress over
//! a websocket.

use chrono::TimeDelta;
use vitrina::jobs::merge::{self, MergeSettings};

use crate::helpers::TestApp;

mod jobs;
mod live;
mod merge_pass;
mod uploads;
async fn merge_all(app: &TestApp) -> merge::MergeReport {
    app.jobs().tick().await.expect("tick").merge
}
fn settings(batch: u64) -> MergeSettings {
    MergeSettings {
        batch,
        lease: TimeDelta::minutes(5),
        max_attempts: 3,
        public_url: "http://vitrina.test".into(),
        max_product_bytes: vitrina::config::SizeConfig::default().max_product_bytes(),
    }
}
