//! Background work over the database. Each job is a plain async function that
//! takes the connection and the time; schedulers only call them.

pub mod completion;
pub mod merge;
pub mod retention;
pub mod scheduler;
pub mod snapshots;
