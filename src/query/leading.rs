//! The first entries of a list in its order, picked from entries that
//! arrive in any order without holding the others: [`Leading`] keeps at
//! most a number of entries and of bytes, and once it has left an entry
//! out, everything after it in the order stays out. What it keeps at the
//! end is the longest start of the whole list within both bounds, however
//! many entries were offered: the snapshot job picks each list of a day
//! from every distinct category path or brand this way, and a read of a
//! list sorts the entries of one product count with it.

use std::collections::BTreeMap;

/// The longest start of a list, in `T`'s order, within at most
/// `max_entries` entries and `max_bytes` bytes.
#[derive(Debug)]
pub struct Leading<T: Ord> {
    /// The entries kept, each with its bytes.
    kept: BTreeMap<T, u64>,
    bytes: u64,
    max_entries: usize,
    max_bytes: u64,
    /// The first entry left out, when one was: no entry from it on can
    /// belong to the start, since the start up to it did not fit.
    cut: Option<T>,
}

impl<T: Ord> Leading<T> {
    pub fn new(max_entries: u64, max_bytes: u64) -> Self {
        Leading {
            kept: BTreeMap::new(),
            bytes: 0,
            max_entries: usize::try_from(max_entries).unwrap_or(usize::MAX),
            max_bytes,
            cut: None,
        }
    }

    /// Offers `entry`, which takes `bytes`: kept if it belongs to the start
    /// within the bounds, leaving out the last entries kept that no longer
    /// fit with it.
    pub fn offer(&mut self, entry: T, bytes: u64) {
        if self.cut.as_ref().is_some_and(|cut| entry >= *cut) {
            return;
        }
        self.bytes = self.bytes.saturating_add(bytes);
        if let Some(replaced) = self.kept.insert(entry, bytes) {
            self.bytes -= replaced;
        }
        while self.kept.len() > self.max_entries || self.bytes > self.max_bytes {
            let Some((last, bytes)) = self.kept.pop_last() else {
                break;
            };
            self.bytes -= bytes;
            self.cut = Some(last);
        }
    }

    /// The entries kept, in order, each with its bytes; and whether any
    /// offered was left out.
    pub fn finish(self) -> (Vec<(T, u64)>, bool) {
        (self.kept.into_iter().collect(), self.cut.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Offers `entries` (an entry is its own size) in the order given.
    fn leading(entries: &[u64], max_entries: u64, max_bytes: u64) -> (Vec<u64>, bool) {
        let mut leading = Leading::new(max_entries, max_bytes);
        for &entry in entries {
            leading.offer(entry, entry);
        }
        let (kept, cut) = leading.finish();
        (kept.into_iter().map(|(entry, _)| entry).collect(), cut)
    }

    /// The longest start of the sorted entries within the bounds.
    fn start(entries: &[u64], max_entries: u64, max_bytes: u64) -> (Vec<u64>, bool) {
        let mut sorted = entries.to_vec();
        sorted.sort_unstable();
        let mut bytes = 0;
        let kept: Vec<u64> = sorted
            .iter()
            .copied()
            .take(max_entries as usize)
            .take_while(|&entry| {
                bytes += entry;
                bytes <= max_bytes
            })
            .collect();
        let cut = kept.len() < sorted.len();
        (kept, cut)
    }

    #[test]
    fn what_is_kept_is_the_start_of_the_list_whatever_order_entries_come_in() {
        // Every order of a few entries, sizes chosen so that a small entry
        // after a large one that did not fit must stay out too.
        let entries = [5, 1, 9, 3, 7, 2];
        let mut orders = vec![entries.to_vec()];
        for shift in 1..entries.len() {
            let mut order = entries.to_vec();
            order.rotate_left(shift);
            orders.push(order.clone());
            order.reverse();
            orders.push(order);
        }
        for order in &orders {
            for max_entries in 0..=7 {
                for max_bytes in [0, 1, 3, 5, 6, 10, 11, 17, 27, 100] {
                    assert_eq!(
                        leading(order, max_entries, max_bytes),
                        start(&entries, max_entries, max_bytes),
                        "{order:?}, {max_entries} entries, {max_bytes} bytes"
                    );
                }
            }
        }
    }

    #[test]
    fn many_entries_offered_hold_no_more_than_the_bounds() {
        let mut leading = Leading::new(100, 1_000);
        let mut most = 0;
        for n in (0..100_000u64).rev() {
            leading.offer(n, n % 7);
            most = most.max(leading.kept.len());
            assert!(leading.bytes <= 1_000);
        }
        assert!(most <= 100);
        let (kept, cut) = leading.finish();
        assert!(cut);
        assert_eq!(kept.first().map(|(n, _)| *n), Some(0));
    }
}
