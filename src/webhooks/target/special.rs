//! Addresses a webhook may not be sent to: every block of the IANA IPv4 and
//! IPv6 Special-Purpose Address Registries, followed as updated 2025-10-09
//! (the newest entries: 192.88.99.2/32, RFC 6751, and 100:0:0:1::/64,
//! RFC 9780), plus multicast and the IPv6 forms that carry an IPv4 address
//! but are in neither registry.
//!
//! Every registry entry is refused, including the few the registry marks
//! globally reachable: those are anycast services answered by whichever
//! operator is nearest, possibly our own network (PCP, TURN, DNS-SD SRP, AMT,
//! AS112), identifiers rather than locators (ORCHIDv2, drone entity tags),
//! or IPv4 embedded in IPv6 (NAT64, 6to4, Teredo). No webhook receiver lives
//! there.
//!
//! Every IPv6 form that embeds or translates an IPv4 address is refused
//! whatever the IPv4 address is: a receiver with a public IPv4 address is
//! reached by that address itself, and each such form is a way to reach an
//! IPv4 address through a translator or tunnel whose other end this check
//! cannot see. Outside the registries that means IPv4-compatible `::a.b.c.d`,
//! IPv4-translated `::ffff:0:a.b.c.d` (SIIT) and ISATAP interface
//! identifiers (`…:0:5efe:a.b.c.d`, `…:200:5efe:a.b.c.d` in any prefix: a
//! host with an ISATAP tunnel sends them to the embedded address).
//!
//! IPv6 is also refused outside 2000::/3, the only space IANA allocates for
//! global unicast: the rest is reserved, multicast, or local.

use std::fmt;
use std::net::IpAddr;
use std::sync::LazyLock;

/// The special block an address is in: the block as the registry writes it,
/// and its name there (or, past the registries, what it is). Shown as
/// `loopback (127.0.0.0/8)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Special {
    pub block: &'static str,
    pub name: &'static str,
}

impl fmt::Display for Special {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name, self.block)
    }
}

/// The IANA IPv4 Special-Purpose Address Registry, in its order, then
/// multicast (from the IPv4 Address Space registry).
const IPV4: &[(&str, &str)] = &[
    ("0.0.0.0/8", "this network"),
    ("0.0.0.0/32", "this host on this network"),
    ("10.0.0.0/8", "private-use"),
    ("100.64.0.0/10", "shared address space, carrier-grade NAT"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local"),
    ("172.16.0.0/12", "private-use"),
    ("192.0.0.0/24", "IETF protocol assignments"),
    ("192.0.0.0/29", "IPv4 service continuity prefix"),
    ("192.0.0.8/32", "IPv4 dummy address"),
    ("192.0.0.9/32", "Port Control Protocol anycast"), // globally reachable
    ("192.0.0.10/32", "TURN anycast"),                 // globally reachable
    ("192.0.0.170/32", "NAT64/DNS64 discovery"),
    ("192.0.0.171/32", "NAT64/DNS64 discovery"),
    ("192.0.2.0/24", "documentation, TEST-NET-1"),
    ("192.31.196.0/24", "AS112-v4"), // globally reachable
    ("192.52.193.0/24", "AMT"),      // globally reachable
    ("192.88.99.0/24", "deprecated 6to4 relay anycast"),
    ("192.88.99.2/32", "6a44 relay anycast"),
    ("192.168.0.0/16", "private-use"),
    ("192.175.48.0/24", "direct delegation AS112 service"), // globally reachable
    ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation, TEST-NET-2"),
    ("203.0.113.0/24", "documentation, TEST-NET-3"),
    ("240.0.0.0/4", "reserved"),
    ("255.255.255.255/32", "limited broadcast"),
    ("224.0.0.0/4", "multicast"),
];

/// The IANA IPv6 Special-Purpose Address Registry, in its order, then
/// multicast and the deprecated blocks that are in no registry.
const IPV6: &[(&str, &str)] = &[
    ("::1/128", "loopback"),
    ("::/128", "unspecified"),
    ("::ffff:0:0/96", "IPv4-mapped"),
    ("64:ff9b::/96", "IPv4-IPv6 translation, NAT64"), // globally reachable
    ("64:ff9b:1::/48", "local-use IPv4-IPv6 translation"),
    ("100::/64", "discard-only"),
    ("100:0:0:1::/64", "dummy IPv6 prefix"),
    ("2001::/23", "IETF protocol assignments"),
    ("2001::/32", "Teredo, embeds IPv4"),
    ("2001:1::1/128", "Port Control Protocol anycast"), // globally reachable
    ("2001:1::2/128", "TURN anycast"),                  // globally reachable
    ("2001:1::3/128", "DNS-SD SRP anycast"),            // globally reachable
    ("2001:2::/48", "benchmarking"),
    ("2001:3::/32", "AMT"),          // globally reachable
    ("2001:4:112::/48", "AS112-v6"), // globally reachable
    ("2001:10::/28", "deprecated, previously ORCHID"),
    ("2001:20::/28", "ORCHIDv2"), // globally reachable
    ("2001:30::/28", "drone remote ID protocol entity tags"), // globally reachable
    ("2001:db8::/32", "documentation"),
    ("2002::/16", "6to4, embeds IPv4"),
    ("2620:4f:8000::/48", "direct delegation AS112 service"), // globally reachable
    ("3fff::/20", "documentation"),
    ("5f00::/16", "segment routing (SRv6) SIDs"),
    ("fc00::/7", "unique-local"),
    ("fe80::/10", "link-local"),
    ("ff00::/8", "multicast"),
    ("::/96", "IPv4-compatible, deprecated"),
    ("::ffff:0:0:0/96", "IPv4-translated"),
    ("fec0::/10", "site-local, deprecated"),
];

const OUTSIDE_GLOBAL_UNICAST: Special = Special {
    block: "outside 2000::/3",
    name: "not global unicast space",
};

const ISATAP: Special = Special {
    block: "interface identifier 0:5efe:a.b.c.d",
    name: "ISATAP, embeds IPv4",
};

/// One block, its address as an integer `width` bits wide.
struct Block {
    bits: u128,
    prefix: u8,
    width: u8,
    special: Special,
}

impl Block {
    /// `None` for an entry that is not `address/prefix`: a mistake in the
    /// tables, which `every_entry_of_the_tables_is_a_block` catches and
    /// which refuses every target until it is mended.
    fn parse(block: &'static str, name: &'static str) -> Option<Block> {
        let (addr, prefix) = block.split_once('/')?;
        let (bits, width) = match addr.parse::<IpAddr>().ok()? {
            IpAddr::V4(v4) => (u128::from(u32::from(v4)), 32),
            IpAddr::V6(v6) => (u128::from(v6), 128),
        };
        let prefix = prefix.parse().ok().filter(|prefix| *prefix <= width)?;
        Some(Block {
            bits,
            prefix,
            width,
            special: Special { block, name },
        })
    }

    fn contains(&self, bits: u128) -> bool {
        // A shift by 128 (a /0 block) is None: every address matches.
        let host_bits = u32::from(self.width - self.prefix);
        bits.checked_shr(host_bits).unwrap_or(0) == self.bits.checked_shr(host_bits).unwrap_or(0)
    }
}

static BLOCKS_V4: LazyLock<Option<Vec<Block>>> = LazyLock::new(|| parse(IPV4));
static BLOCKS_V6: LazyLock<Option<Vec<Block>>> = LazyLock::new(|| parse(IPV6));

/// Every block of `table`, or `None` when one does not parse.
fn parse(table: &'static [(&'static str, &'static str)]) -> Option<Vec<Block>> {
    table
        .iter()
        .map(|(block, name)| Block::parse(block, name))
        .collect()
}

/// What every address is when a table does not parse: the check fails
/// closed, refusing every target, rather than allowing a block it lost.
const UNREADABLE: Special = Special {
    block: "a table of src/webhooks/target/special.rs",
    name: "unreadable special-purpose address table",
};

/// The most specific block among `blocks` that holds `bits`.
fn most_specific(blocks: &Option<Vec<Block>>, bits: u128) -> Option<Special> {
    let Some(blocks) = blocks else {
        return Some(UNREADABLE);
    };
    blocks
        .iter()
        .filter(|b| b.contains(bits))
        .max_by_key(|b| b.prefix)
        .map(|b| b.special)
}

/// The special block `addr` is in, or `None` when it is a public address a
/// webhook may be sent to.
pub fn special(addr: IpAddr) -> Option<Special> {
    match addr {
        IpAddr::V4(v4) => most_specific(&BLOCKS_V4, u128::from(u32::from(v4))),
        IpAddr::V6(v6) => {
            let bits = u128::from(v6);
            if let Some(special) = most_specific(&BLOCKS_V6, bits) {
                return Some(special);
            }
            if bits >> 125 != 0b001 {
                return Some(OUTSIDE_GLOBAL_UNICAST);
            }
            // The interface identifier is [0-3]00:5efe:a.b.c.d (the u and g
            // bits may be set).
            let isatap = (bits >> 32) as u32 & 0xfcff_ffff == 0x0000_5efe;
            isatap.then_some(ISATAP)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The name `addr` is refused under, or `None` when it is allowed.
    fn verdict(addr: &str) -> Option<&'static str> {
        special(addr.parse().expect("an address")).map(|s| s.name)
    }

    fn check(cases: &[(&str, Option<&str>)]) {
        let wrong: Vec<String> = cases
            .iter()
            .filter(|(addr, expected)| verdict(addr) != *expected)
            .map(|(addr, expected)| {
                format!("{addr}: expected {expected:?}, got {:?}", verdict(addr))
            })
            .collect();
        assert!(wrong.is_empty(), "{wrong:#?}");
    }

    #[test]
    fn every_entry_of_the_tables_is_a_block() {
        assert!(BLOCKS_V4.is_some() && BLOCKS_V6.is_some());
        // A table with a mistake refuses everything.
        let broken = parse(&[("10.0.0.0/8", "private-use"), ("10.0.0/8", "typo")]);
        assert!(broken.is_none());
        assert_eq!(most_specific(&broken, 0x0808_0808), Some(UNREADABLE));
    }

    #[test]
    fn every_block_is_written_as_its_network_address() {
        for block in BLOCKS_V4.iter().chain(BLOCKS_V6.iter()).flatten() {
            let host_bits = u32::from(block.width - block.prefix);
            let host_mask = 1u128.checked_shl(host_bits).map_or(u128::MAX, |m| m - 1);
            assert_eq!(block.bits & host_mask, 0, "{}", block.special.block);
        }
    }

    #[test]
    fn every_ipv4_registry_entry_is_refused() {
        check(&[
            ("0.1.2.3", Some("this network")),
            ("0.0.0.0", Some("this host on this network")),
            ("10.20.30.40", Some("private-use")),
            (
                "100.64.0.1",
                Some("shared address space, carrier-grade NAT"),
            ),
            ("127.0.0.1", Some("loopback")),
            ("169.254.169.254", Some("link-local")),
            ("172.16.0.1", Some("private-use")),
            ("192.0.0.100", Some("IETF protocol assignments")),
            ("192.0.0.1", Some("IPv4 service continuity prefix")),
            ("192.0.0.8", Some("IPv4 dummy address")),
            ("192.0.0.9", Some("Port Control Protocol anycast")),
            ("192.0.0.10", Some("TURN anycast")),
            ("192.0.0.170", Some("NAT64/DNS64 discovery")),
            ("192.0.0.171", Some("NAT64/DNS64 discovery")),
            ("192.0.2.1", Some("documentation, TEST-NET-1")),
            ("192.31.196.1", Some("AS112-v4")),
            ("192.52.193.1", Some("AMT")),
            ("192.88.99.1", Some("deprecated 6to4 relay anycast")),
            ("192.88.99.2", Some("6a44 relay anycast")),
            ("192.168.1.1", Some("private-use")),
            ("192.175.48.1", Some("direct delegation AS112 service")),
            ("198.19.255.255", Some("benchmarking")),
            ("198.51.100.7", Some("documentation, TEST-NET-2")),
            ("203.0.113.7", Some("documentation, TEST-NET-3")),
            ("240.0.0.1", Some("reserved")),
            ("255.255.255.255", Some("limited broadcast")),
            ("224.0.0.1", Some("multicast")),
            ("239.255.255.255", Some("multicast")),
        ]);
    }

    #[test]
    fn ipv4_neighbours_of_the_blocks_are_public() {
        check(&[
            ("1.0.0.0", None),
            ("9.255.255.255", None),
            ("11.0.0.0", None),
            ("100.63.255.255", None),
            ("100.128.0.0", None),
            ("126.255.255.255", None),
            ("128.0.0.0", None),
            ("169.253.255.255", None),
            ("169.255.0.0", None),
            ("172.15.255.255", None),
            ("172.32.0.0", None),
            ("191.255.255.255", None),
            ("192.0.1.0", None),
            ("192.0.3.0", None),
            ("192.31.195.255", None),
            ("192.31.197.0", None),
            ("192.52.192.255", None),
            ("192.88.98.255", None),
            ("192.88.100.0", None),
            ("192.167.255.255", None),
            ("192.169.0.0", None),
            ("192.175.47.255", None),
            ("192.175.49.0", None),
            ("198.17.255.255", None),
            ("198.20.0.0", None),
            ("198.51.99.255", None),
            ("203.0.112.255", None),
            ("203.0.114.0", None),
            ("223.255.255.255", None),
            ("8.8.8.8", None),
        ]);
    }

    #[test]
    fn every_ipv6_registry_entry_is_refused() {
        check(&[
            ("::1", Some("loopback")),
            ("::", Some("unspecified")),
            ("::ffff:127.0.0.1", Some("IPv4-mapped")),
            ("::ffff:8.8.8.8", Some("IPv4-mapped")),
            ("64:ff9b::7f00:1", Some("IPv4-IPv6 translation, NAT64")),
            ("64:ff9b::8.8.8.8", Some("IPv4-IPv6 translation, NAT64")),
            ("64:ff9b:1::7f00:1", Some("local-use IPv4-IPv6 translation")),
            ("100::1", Some("discard-only")),
            ("100:0:0:1::1", Some("dummy IPv6 prefix")),
            ("2001:1ff::1", Some("IETF protocol assignments")),
            // Teredo: server 65.54.227.120, client 127.0.0.1 (bits inverted).
            (
                "2001:0:4136:e378:8000:63bf:80ff:fffe",
                Some("Teredo, embeds IPv4"),
            ),
            ("2001:1::1", Some("Port Control Protocol anycast")),
            ("2001:1::2", Some("TURN anycast")),
            ("2001:1::3", Some("DNS-SD SRP anycast")),
            ("2001:2::1", Some("benchmarking")),
            ("2001:3::1", Some("AMT")),
            ("2001:4:112::1", Some("AS112-v6")),
            ("2001:10::1", Some("deprecated, previously ORCHID")),
            ("2001:20::1", Some("ORCHIDv2")),
            ("2001:30::1", Some("drone remote ID protocol entity tags")),
            ("2001:db8::1", Some("documentation")),
            ("2002:7f00:1::1", Some("6to4, embeds IPv4")),
            ("2620:4f:8000::1", Some("direct delegation AS112 service")),
            ("3fff:fff:ffff::1", Some("documentation")),
            ("5f00::1", Some("segment routing (SRv6) SIDs")),
            ("fd12:3456::1", Some("unique-local")),
            ("fe80::1", Some("link-local")),
        ]);
    }

    #[test]
    fn ipv6_forms_beyond_the_registry_are_refused() {
        check(&[
            ("ff02::1", Some("multicast")),
            ("::127.0.0.1", Some("IPv4-compatible, deprecated")),
            ("::8.8.8.8", Some("IPv4-compatible, deprecated")),
            ("::ffff:0:127.0.0.1", Some("IPv4-translated")),
            ("::ffff:0:8.8.8.8", Some("IPv4-translated")),
            ("fec0::1", Some("site-local, deprecated")),
            ("1fff:ffff::1", Some("not global unicast space")),
            ("4000::1", Some("not global unicast space")),
            ("200::1", Some("not global unicast space")),
            ("2606:4700::5efe:7f00:1", Some("ISATAP, embeds IPv4")),
            ("2606:4700::200:5efe:808:808", Some("ISATAP, embeds IPv4")),
        ]);
    }

    #[test]
    fn ipv6_neighbours_of_the_blocks_are_public() {
        check(&[
            ("2000::1", None),
            ("2001:200::1", None),
            ("2001:db7:ffff::1", None),
            ("2001:db9::1", None),
            ("2001:4860:4860::8888", None),
            ("2003::1", None),
            ("2620:4f:7fff:ffff::1", None),
            ("2620:4f:8001::1", None),
            ("2606:4700:4700::1111", None),
            ("2606:4700::5eff:7f00:1", None),
            ("3ffe:ffff::1", None),
            ("3fff:1000::1", None),
            ("3fff:ffff:ffff::1", None),
        ]);
    }
}
