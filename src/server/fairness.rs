//! Who holds the server's connections, so that no one client can hold them
//! all (see [`super::connections`], which enforces what is kept here):
//!
//! - [`Clients`] counts the open connections of each client address; one
//!   more than `VITRINA_HTTP_MAX_CONNECTIONS_PER_CLIENT` is refused. IPv6
//!   addresses are counted by their /64 prefix: one host is usually given a
//!   whole /64 and may use any of its 2^64 addresses, so counting single
//!   IPv6 addresses would bound nothing. An IPv4 address mapped into IPv6
//!   (`::ffff:a.b.c.d`) is its IPv4 address.
//! - [`IdleQueue`] lists the connections kept alive between requests, oldest
//!   idle first, so that when every connection slot is taken the one idle
//!   the longest is closed to make room for a new client.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;

/// The part of a client's address that its connections are counted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientKey {
    V4([u8; 4]),
    /// The /64 prefix.
    V6([u8; 8]),
}

impl From<IpAddr> for ClientKey {
    fn from(ip: IpAddr) -> Self {
        match ip.to_canonical() {
            IpAddr::V4(v4) => ClientKey::V4(v4.octets()),
            IpAddr::V6(v6) => {
                let mut prefix = [0u8; 8];
                prefix.copy_from_slice(&v6.octets()[..8]);
                ClientKey::V6(prefix)
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Open connections per client, each at most `max`.
pub struct Clients {
    max: u64,
    open: Mutex<HashMap<ClientKey, u64>>,
}

/// A client over its limit: how many it has open, and the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverLimit {
    pub open: u64,
    pub max: u64,
}

impl Clients {
    pub fn new(max: u64) -> Arc<Clients> {
        Arc::new(Clients {
            max,
            open: Mutex::new(HashMap::new()),
        })
    }

    /// Counts one more connection of `ip`, unless it has its most open
    /// already; the count goes down when the returned guard is dropped.
    pub fn enter(self: &Arc<Self>, ip: IpAddr) -> Result<ClientSlot, OverLimit> {
        let key = ClientKey::from(ip);
        let mut open = lock(&self.open);
        let count = open.entry(key).or_default();
        if *count >= self.max {
            return Err(OverLimit {
                open: *count,
                max: self.max,
            });
        }
        *count += 1;
        Ok(ClientSlot {
            clients: self.clone(),
            key,
        })
    }
}

/// One open connection of a client, counted until dropped.
pub struct ClientSlot {
    clients: Arc<Clients>,
    key: ClientKey,
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut open = lock(&self.clients.open);
        if let Some(count) = open.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.key);
            }
        }
    }
}

/// The connections idle between requests, by when they became idle.
#[derive(Default)]
pub struct IdleQueue {
    inner: Mutex<Queue>,
}

#[derive(Default)]
struct Queue {
    /// Handed out in order, so the smallest is the oldest idle.
    next: u64,
    /// What wakes each idle connection to close it.
    waiting: BTreeMap<u64, Arc<Notify>>,
}

/// A connection's place in the [`IdleQueue`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place(u64);

impl IdleQueue {
    /// Adds a connection that has just become idle; `close` is notified if
    /// it is chosen to make room.
    pub fn push(&self, close: &Arc<Notify>) -> Place {
        let mut queue = lock(&self.inner);
        let place = queue.next;
        queue.next += 1;
        queue.waiting.insert(place, close.clone());
        Place(place)
    }

    /// Takes out a connection no longer idle (or closed).
    pub fn remove(&self, place: Place) {
        lock(&self.inner).waiting.remove(&place.0);
    }

    /// Asks the connection idle the longest to close; `false` when none is
    /// idle.
    pub fn close_oldest(&self) -> bool {
        let oldest = lock(&self.inner).waiting.pop_first();
        match oldest {
            Some((_, close)) => {
                close.notify_one();
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use super::*;

    #[test]
    fn ipv6_addresses_of_one_64_prefix_are_one_client_and_mapped_ipv4_is_ipv4() {
        let a: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff:ffff:ffff:ffff".parse().unwrap();
        let other: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(ClientKey::from(a), ClientKey::from(b));
        assert_ne!(ClientKey::from(a), ClientKey::from(other));
        let mapped = IpAddr::V6(Ipv4Addr::new(192, 0, 2, 7).to_ipv6_mapped());
        assert_eq!(
            ClientKey::from(mapped),
            ClientKey::from(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 7)))
        );
        assert_ne!(
            ClientKey::from(IpAddr::V6(Ipv6Addr::LOCALHOST)),
            ClientKey::from(IpAddr::V4(Ipv4Addr::LOCALHOST))
        );
    }

    #[test]
    fn a_client_gets_its_most_connections_and_one_more_once_one_closes() {
        let clients = Clients::new(2);
        let ip = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
        let first = clients.enter(ip).unwrap();
        let _second = clients.enter(ip).unwrap();
        assert_eq!(clients.enter(ip).err(), Some(OverLimit { open: 2, max: 2 }));
        assert!(clients.enter(IpAddr::V4(Ipv4Addr::LOCALHOST)).is_ok());
        drop(first);
        assert!(clients.enter(ip).is_ok());
    }

    #[test]
    fn the_connection_idle_longest_is_closed_first() {
        let queue = IdleQueue::default();
        let (a, b, c) = (Arc::default(), Arc::default(), Arc::default());
        let _a = queue.push(&a);
        let b_place = queue.push(&b);
        let _c = queue.push(&c);
        queue.remove(b_place);
        assert!(queue.close_oldest());
        assert!(queue.close_oldest());
        assert!(!queue.close_oldest());
        for (notify, notified) in [(a, true), (b, false), (c, true)] {
            let waiting = notify.notified();
            tokio::pin!(waiting);
            assert_eq!(waiting.enable(), notified);
        }
    }
}
