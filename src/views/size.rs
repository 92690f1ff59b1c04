//! How many bytes a view takes as JSON, as serde_json writes it (compact,
//! as REST answers): counted without keeping the bytes, or written only as
//! far as a limit, so that measuring or refusing a large answer never holds
//! more than the limit.

use std::io::{self, Write};

use serde::Serialize;

/// Bytes of `value` as JSON, counted as they are written and dropped.
pub fn json_len<T: Serialize + ?Sized>(value: &T) -> u64 {
    let mut counted = Counted(0);
    // Counting never fails, and views are maps with string keys.
    let _ = serde_json::to_writer(&mut counted, value);
    counted.0
}

/// `value` as JSON when it takes at most `limit` bytes; else how far it got
/// (`limit` + 1): the writing stops there.
pub fn to_json_within<T: Serialize + ?Sized>(value: &T, limit: u64) -> Result<Vec<u8>, u64> {
    let mut within = Within {
        bytes: Vec::new(),
        limit,
    };
    match serde_json::to_writer(&mut within, value) {
        Ok(()) => Ok(within.bytes),
        Err(_) => Err(limit.saturating_add(1)),
    }
}

struct Counted(u64);

impl Write for Counted {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 = self.0.saturating_add(buf.len() as u64);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

struct Within {
    bytes: Vec<u8>,
    limit: u64,
}

impl Write for Within {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if (self.bytes.len() + buf.len()) as u64 > self.limit {
            return Err(io::Error::other("past the limit"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_value_is_measured_as_written_and_written_only_within_its_limit() {
        let value = json!({ "name": "Чайник \"Vitrina\"\n", "tags": [1, 2.5, null] });
        let written = serde_json::to_vec(&value).unwrap();
        let len = written.len() as u64;
        assert_eq!(json_len(&value), len);
        assert_eq!(to_json_within(&value, len), Ok(written));
        assert_eq!(to_json_within(&value, len - 1), Err(len));
    }
}
