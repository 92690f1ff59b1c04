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
//! What "public" means is [`special`]: an address outside every block of
//! the IANA special-purpose registries and of the few other non-unicast or
//! IPv4-embedding blocks listed there.
//!
//! The development switch (`--webhook-allow-insecure-targets`) turns every
//! check off, for local testing against `http://127.0.0.1:...`.

use std::net::{IpAddr, SocketAddr};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use url::{Host, Url};

use crate::config::WebhookTargets;

pub use special::Special;
use special::special;

mod special;

/// Why a target is refused. Every message is one human sentence fragment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// The URL by itself is not allowed (syntax, scheme, an IP literal that
    /// is not public). It stays refused whatever DNS says.
    #[error("{0}")]
    NotAllowed(String),
    /// The host resolves to an address that is not public.
    #[error("{host} resolves to {addr}, which is {special}; webhook targets must be public")]
    NonPublicAddress {
        host: String,
        addr: IpAddr,
        special: Special,
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

impl From<&WebhookTargets> for TargetPolicy {
    fn from(config: &WebhookTargets) -> Self {
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
            && let Some(special) = special(addr)
        {
            return Err(TargetError::NotAllowed(format!(
                "{addr} is {special}; webhook targets must be public"
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
            && let Some((addr, special)) = addrs
                .iter()
                .find_map(|a| special(a.ip()).map(|special| (a.ip(), special)))
        {
            return Err(TargetError::NonPublicAddress {
                host: host.to_owned(),
                addr,
                special,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_without_dns() {
        let strict = TargetPolicy {
            allow_insecure: false,
        };
        assert!(strict.check_url("https://hooks.example.com/x").is_ok());
        assert!(strict.check_url("https://[2606:4700:4700::1111]/x").is_ok());
        assert!(strict.check_url("http://hooks.example.com/x").is_err());
        assert!(strict.check_url("https://127.0.0.1/").is_err());
        assert!(strict.check_url("https://[::ffff:127.0.0.1]/").is_err());
        assert!(strict.check_url("https://[::ffff:0:127.0.0.1]/").is_err());
        assert!(strict.check_url("https://[2002:7f00:1::1]/").is_err());
        // Other spellings of 127.0.0.1 are normalized by the URL parser.
        assert!(strict.check_url("https://2130706433/").is_err());
        assert!(strict.check_url("https://0x7f.1/").is_err());
        assert!(strict.check_url("ftp://hooks.example.com/").is_err());
        let refused = strict.check_url("https://[::1]/").unwrap_err().to_string();
        assert_eq!(
            refused,
            "::1 is loopback (::1/128); webhook targets must be public"
        );
        let dev = TargetPolicy {
            allow_insecure: true,
        };
        assert!(dev.check_url("http://127.0.0.1:9000/").is_ok());
    }
}
