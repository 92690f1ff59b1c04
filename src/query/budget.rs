//! The byte budget of one answer (`VITRINA_MAX_RESPONSE_MB`), spent by the
//! products it reads: each is counted at its stored size
//! (`products.stored_size`, the bytes of its v1 JSON) as its row arrives,
//! before the next is read, so what a request holds of products never
//! passes the budget by more than one product. A request whose products
//! pass it is refused, [`QueryError::TooLarge`], instead of building an
//! answer of that size. A list that stops at its bound instead (a
//! snapshot list, `query::snapshots`) takes of the budget only what fits
//! ([`ResponseBudget::take`]).
//!
//! Products stored before the per-product limit may be larger than it: a
//! page statement reads the documents (attributes, galleries, ...) and the
//! lists (translations, prices) only of products up to that limit, and
//! reads a larger one alone once its size is counted, so one legacy product
//! can never make a page hold more than the budget.
//!
//! One budget serves one answer: a REST request, a GraphQL request over
//! HTTP (all its operations, which may read concurrently), an operation
//! over the WebSocket, or one update of a subscription.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};

use uuid::Uuid;

use super::QueryError;

#[derive(Debug)]
pub struct ResponseBudget {
    /// Bytes the answer may hold.
    limit: u64,
    /// Products up to this size are read whole by a page statement.
    whole: Option<u64>,
    /// Bytes counted so far.
    spent: AtomicU64,
}

impl ResponseBudget {
    /// A budget of `limit` bytes, over products of at most `max_product`
    /// bytes each (the per-product limit of the merge).
    pub fn new(limit: u64, max_product: u64) -> Self {
        ResponseBudget {
            limit,
            whole: Some(max_product),
            spent: AtomicU64::new(0),
        }
    }

    /// No budget: for what the service reads for itself (the merge measures
    /// the product it wrote).
    pub fn unlimited() -> Self {
        ResponseBudget {
            limit: u64::MAX,
            whole: None,
            spent: AtomicU64::new(0),
        }
    }

    /// The largest product a page statement reads whole; `None`: any.
    pub fn whole_product(&self) -> Option<u64> {
        self.whole
    }

    /// Counts `bytes` more of the answer; refused once the answer passes
    /// the budget (and every later count of it is refused too).
    pub fn charge(&self, bytes: i64) -> Result<(), QueryError> {
        let bytes = u64::try_from(bytes).unwrap_or(0);
        let before = self
            .spent
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |spent| {
                Some(spent.saturating_add(bytes))
            })
            .unwrap_or_default();
        let reached = before.saturating_add(bytes);
        if reached <= self.limit {
            return Ok(());
        }
        Err(QueryError::TooLarge {
            limit: self.limit,
            reached,
        })
    }

    /// Counts `bytes` more of the answer only if they fit in what is left of
    /// the budget, and says whether they did: a list stops where its answer
    /// is full instead of refusing it (and leaves the rest of the budget
    /// untouched, so nothing else of the answer is refused for it).
    pub fn take(&self, bytes: u64) -> bool {
        self.spent
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |spent| {
                spent
                    .checked_add(bytes)
                    .filter(|reached| *reached <= self.limit)
            })
            .is_ok()
    }

    /// Bytes left before the answer passes the budget.
    pub fn remaining(&self) -> u64 {
        self.limit
            .saturating_sub(self.spent.load(Ordering::Relaxed))
    }

    /// Counts again each product that `shown` (product ids in the order an
    /// answer shows them) holds more than once: read once, it is written
    /// once per place it is shown. `size_of` gives a product's stored size.
    pub fn charge_repeats(
        &self,
        shown: &[Uuid],
        size_of: impl Fn(&Uuid) -> Option<i64>,
    ) -> Result<(), QueryError> {
        let mut seen = HashSet::new();
        for id in shown {
            if !seen.insert(id)
                && let Some(size) = size_of(id)
            {
                self.charge(size)?;
            }
        }
        Ok(())
    }

    /// Starts the next answer with the whole budget (a subscription's next
    /// update is an answer of its own).
    pub fn renew(&self) {
        self.spent.store(0, Ordering::Relaxed);
    }

    /// The refusal of an answer that passed the budget, if it did.
    pub fn exceeded(&self) -> Option<QueryError> {
        let reached = self.spent.load(Ordering::Relaxed);
        (reached > self.limit).then_some(QueryError::TooLarge {
            limit: self.limit,
            reached,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_refused_once_it_passes_the_budget_and_stays_refused() {
        let budget = ResponseBudget::new(100, 60);
        assert!(budget.charge(60).is_ok());
        assert!(budget.charge(40).is_ok(), "exactly at the budget");
        assert!(budget.exceeded().is_none());
        match budget.charge(1) {
            Err(QueryError::TooLarge { limit, reached }) => {
                assert_eq!((limit, reached), (100, 101))
            }
            other => panic!("{other:?}"),
        }
        assert!(budget.charge(0).is_err(), "stays refused");
        assert!(budget.exceeded().is_some());
        assert!(ResponseBudget::unlimited().charge(i64::MAX).is_ok());
    }

    #[test]
    fn a_list_takes_only_what_fits_and_leaves_the_answer_unrefused() {
        let budget = ResponseBudget::new(100, 60);
        assert!(budget.take(70));
        assert!(!budget.take(31), "one byte too many");
        assert_eq!(budget.remaining(), 30, "what did not fit is not counted");
        assert!(budget.take(30));
        assert_eq!(budget.remaining(), 0);
        assert!(budget.exceeded().is_none());
    }
}
