//! Background work over the database. Each job is a plain async function that
//! takes the connection and the time; schedulers only call them.

pub mod snapshots;
