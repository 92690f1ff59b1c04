//! Which webhook targets may be dialled (server-side request forgery guard).
//!
//! A target must be an `https://` URL whose host is a public address. The rule
//! is applied twice: when a subscription is created (the host must resolve,
//! and only to public addresses) and on every delivery attempt. On delivery
//! the check lives inside the HTTP client's DNS resolver
//! ([`PublicResolver`]), so the address that was checked is the address that
//! is dialled: there is no window for a DNS answer to change in between
//! (DNS rebinding). reqwest does not call the resolver for IP-literal hosts,
//! so [`TargetPolicy::check_url`] judges those itself.
//!
//! The development switch (`--webhook-allow-insecure-targets`) turns every
//! check off, for local testing against `http://127.0.0.1:...`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use url::{Host, Url};

use crate::config::WebhookConfig;

/// Why a target is refused. Every message is one human sentence fragment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// The URL by itself is not allowed (syntax, scheme, an IP literal that
    /// is not public). It stays refused whatever DNS says.
    #[error("{0}")]
    NotAllowed(String),
    /// The host resolves to an address that is not public.
    #[error("{host} resolves to {addr}, a {kind} address; webhook targets must be public")]
    NonPublicAddress {
        host: String,
        addr: IpAddr,
        kind: &'static str,
    },
    /// The host does not resolve at all.
    #[error("{host} does not resolve: {reason}")]
    Unresolvable { host: String, reason: String },
}

/// The target rules in force: strict, or everything allowed under the
/// development switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetPolicy {
    pub allow_insecure: bool,
}

impl From<&WebhookConfig> for TargetPolicy {
    fn from(config: &WebhookConfig) -> Self {
        TargetPolicy {
            allow_insecure: config.webhook_allow_insecure_targets,
        }
    }
}

impl TargetPolicy {
    /// Checks what can be checked without DNS: the URL parses, its scheme is
    /// https, it has a host, and an IP-literal host is public.
    pub fn check_url(self, raw: &str) -> Result<Url, TargetError> {
        let url = Url::parse(raw.trim())
            .map_err(|e| TargetError::NotAllowed(format!("the URL is not valid: {e}")))?;
        match url.scheme() {
            "https" => {}
            "http" if self.allow_insecure => {}
            _ => {
                return Err(TargetError::NotAllowed(
                    "the target must be an https:// URL".into(),
                ));
            }
        }
        let literal = match url.host() {
            None => return Err(TargetError::NotAllowed("the URL has no host".into())),
            Some(Host::Domain(_)) => None,
            Some(Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
            Some(Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
        };
        if let Some(addr) = literal
            && !self.allow_insecure
            && let Some(kind) = non_public_kind(addr)
        {
            return Err(TargetError::NotAllowed(format!(
                "{addr} is a {kind} address; webhook targets must be public"
            )));
        }
        Ok(url)
    }

    /// The full check done when a subscription is created: [`Self::check_url`],
    /// then a hostname must resolve, and only to public addresses.
    pub async fn check_target(self, raw: &str) -> Result<Url, TargetError> {
        let url = self.check_url(raw)?;
        if let Some(Host::Domain(host)) = url.host() {
            let port = url.port_or_known_default().unwrap_or(443);
            self.resolve(host, port).await?;
        }
        Ok(url)
    }

    /// Resolves a hostname and refuses the whole answer if any address in it
    /// is not public: a name that mixes public and private addresses is not
    /// a target anyone should need.
    async fn resolve(self, host: &str, port: u16) -> Result<Vec<SocketAddr>, TargetError> {
        let unresolvable = |reason: String| TargetError::Unresolvable {
            host: host.to_owned(),
            reason,
        };
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
            .await
            .map_err(|e| unresolvable(e.to_string()))?
            .collect();
        if addrs.is_empty() {
            return Err(unresolvable("no addresses".into()));
        }
        if !self.allow_insecure
            && let Some((addr, kind)) = addrs
                .iter()
                .find_map(|a| non_public_kind(a.ip()).map(|kind| (a.ip(), kind)))
        {
            return Err(TargetError::NonPublicAddress {
                host: host.to_owned(),
                addr,
                kind,
            });
        }
        Ok(addrs)
    }
}

/// The DNS resolver of the delivery client: it answers only with addresses
/// the policy allows, so a connection can only be made to a checked address.
#[derive(Debug, Clone, Copy)]
pub struct PublicResolver(pub TargetPolicy);

impl Resolve for PublicResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.0;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            // Port 0: reqwest puts the URL's port in place of it.
            let addrs = policy.resolve(&host, 0).await?;
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// Address blocks that are not reachable public unicast destinations.
const BLOCKED_V4: &[(Ipv4Addr, u8, &str)] = &[
    (Ipv4Addr::new(0, 0, 0, 0), 8, "\"this network\""),
    (Ipv4Addr::new(10, 0, 0, 0), 8, "private"),
    (Ipv4Addr::new(100, 64, 0, 0), 10, "carrier-grade NAT"),
    (Ipv4Addr::new(127, 0, 0, 0), 8, "loopback"),
    (Ipv4Addr::new(169, 254, 0, 0), 16, "link-local"),
    (Ipv4Addr::new(172, 16, 0, 0), 12, "private"),
    (Ipv4Addr::new(192, 0, 0, 0), 24, "IETF protocol"),
    (Ipv4Addr::new(192, 0, 2, 0), 24, "documentation"),
    (Ipv4Addr::new(192, 168, 0, 0), 16, "private"),
    (Ipv4Addr::new(198, 18, 0, 0), 15, "benchmarking"),
    (Ipv4Addr::new(198, 51, 100, 0), 24, "documentation"),
    (Ipv4Addr::new(203, 0, 113, 0), 24, "documentation"),
    (Ipv4Addr::new(224, 0, 0, 0), 4, "multicast"),
    // 240/4 is reserved and ends with the broadcast address 255.255.255.255.
    (Ipv4Addr::new(240, 0, 0, 0), 4, "reserved or broadcast"),
];

const BLOCKED_V6: &[(Ipv6Addr, u8, &str)] = &[
    // IPv4-compatible addresses (deprecated); also covers :: and ::1.
    (
        Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 0),
        96,
        "unspecified, loopback or IPv4-compatible",
    ),
    (
        Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0),
        64,
        "discard-only",
    ),
    (
        Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0),
        32,
        "documentation",
    ),
    (
        Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0),
        7,
        "unique-local",
    ),
    (Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10, "link-local"),
    (Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0), 10, "site-local"),
    (Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0), 8, "multicast"),
];

/// IPv6 prefixes that carry an IPv4 address in their last 32 bits: the
/// embedded address decides.
const EMBEDDING_V4: &[(Ipv6Addr, u8)] = &[
    (Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, 0, 0), 96), // IPv4-mapped
    (Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0), 96), // NAT64
];

/// What kind of non-public address `addr` is, or `None` when it is public.
fn non_public_kind(addr: IpAddr) -> Option<&'static str> {
    match addr {
        IpAddr::V4(v4) => BLOCKED_V4
            .iter()
            .find(|(net, prefix, _)| {
                same_prefix(u32::from(v4).into(), u32::from(*net).into(), *prefix, 32)
            })
            .map(|(_, _, kind)| *kind),
        IpAddr::V6(v6) => {
            let bits = u128::from(v6);
            if EMBEDDING_V4
                .iter()
                .any(|(net, prefix)| same_prefix(bits, u128::from(*net), *prefix, 128))
            {
                // Truncation keeps exactly the embedded IPv4 address.
                return non_public_kind(IpAddr::V4(Ipv4Addr::from(bits as u32)));
            }
            BLOCKED_V6
                .iter()
                .find(|(net, prefix, _)| same_prefix(bits, u128::from(*net), *prefix, 128))
                .map(|(_, _, kind)| *kind)
        }
    }
}

/// Whether two addresses, `width` bits wide, agree on their first `prefix` bits.
fn same_prefix(a: u128, b: u128, prefix: u8, width: u32) -> bool {
    let host_bits = width - u32::from(prefix);
    // A shift by 128 (a /0 block of IPv6) is None: every address matches.
    a.checked_shr(host_bits).unwrap_or(0) == b.checked_shr(host_bits).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(addr: &str) -> Option<&'static str> {
        non_public_kind(addr.parse().expect("an address"))
    }

    #[test]
    fn private_and_special_addresses_are_not_public() {
        for addr in [
            "0.0.0.0",
            "10.1.2.3",
            "100.64.0.1",
            "100.127.255.255",
            "127.0.0.1",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.2.10",
            "192.168.1.1",
            "198.18.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2001:db8::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "ff02::1",
        ] {
            assert!(kind(addr).is_some(), "{addr} should be refused");
        }
    }

    #[test]
    fn public_addresses_are_public() {
        for addr in [
            "1.1.1.1",
            "8.8.8.8",
            "100.63.255.255",
            "100.128.0.0",
            "172.32.0.1",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert_eq!(kind(addr), None, "{addr} should be allowed");
        }
    }

    #[test]
    fn urls_are_checked_without_dns() {
        let strict = TargetPolicy {
            allow_insecure: false,
        };
        assert!(strict.check_url("https://hooks.example.com/x").is_ok());
        assert!(strict.check_url("http://hooks.example.com/x").is_err());
        assert!(strict.check_url("https://127.0.0.1/").is_err());
        assert!(strict.check_url("https://[::ffff:127.0.0.1]/").is_err());
        // Other spellings of 127.0.0.1 are normalized by the URL parser.
        assert!(strict.check_url("https://2130706433/").is_err());
        assert!(strict.check_url("ftp://hooks.example.com/").is_err());
        let dev = TargetPolicy {
            allow_insecure: true,
        };
        assert!(dev.check_url("http://127.0.0.1:9000/").is_ok());
    }
}
