//! Ids of the generated rows, unique by construction.
//!
//! Drawing ids at random makes them collide once a catalog is large (a
//! nine-digit external id drawn for each of 400,000 products collides with
//! near certainty). Each id here is instead a keyed permutation of the row's
//! index: distinct indexes give distinct ids for every seed, while the ids
//! still look random and differ from seed to seed. The permutation is a
//! small Feistel network, a bijection whatever its round function, narrowed
//! to a decimal range by cycle walking (applied again until the value falls
//! in the range, which keeps it a bijection of that range).

use uuid::Uuid;

/// The most products a catalog may have: the size of the external-id range
/// (nine digits, no leading zero), less room for the demo's pending items,
/// whose external ids follow the catalog's.
pub const MAX_PRODUCTS: u64 = EXTERNAL_IDS.end - EXTERNAL_IDS.start - 1_000;

/// External ids: nine digits.
const EXTERNAL_IDS: std::ops::Range<u64> = 100_000_000..1_000_000_000;
/// Seller ids on the marketplace: six to nine digits.
const SELLER_IDS: std::ops::Range<u64> = 100_000..1_000_000_000;

/// Rounds of the Feistel network; four make a keyed permutation that shows
/// no pattern in its outputs.
const ROUNDS: usize = 4;

/// What an id is for; each kind has its own keys, so a seller and a product
/// of the same index get unrelated ids.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    Seller = 1,
    Product = 2,
    Session = 3,
    ExternalId = 4,
    SellerId = 5,
}

/// The id derivations of one `--seed`.
#[derive(Debug, Clone)]
pub struct Ids {
    seed: u64,
}

impl Ids {
    pub fn new(seed: u64) -> Self {
        Ids { seed }
    }

    /// A version-4 UUID for row `index` of `kind`: 64 of its random bits are
    /// a permutation of the index, the others a hash of those.
    pub fn uuid(&self, kind: Kind, index: u64) -> Uuid {
        let unique = Feistel::new(self.seed, kind, 32).apply(index).to_be_bytes();
        let filler = mix(u64::from_be_bytes(unique) ^ key(self.seed, kind, 99)).to_be_bytes();
        // The version nibble (byte 6) and the variant bits (byte 8) are
        // overwritten by the builder, so the unique bytes stay clear of them.
        let mut bytes = [0u8; 16];
        bytes[..6].copy_from_slice(&unique[..6]);
        bytes[6..9].copy_from_slice(&filler[..3]);
        bytes[9..11].copy_from_slice(&unique[6..]);
        bytes[11..].copy_from_slice(&filler[3..]);
        uuid::Builder::from_random_bytes(bytes).into_uuid()
    }

    /// The marketplace's id of product `index`: nine digits.
    pub fn external_id(&self, index: u64) -> String {
        self.decimal(Kind::ExternalId, EXTERNAL_IDS, index)
            .to_string()
    }

    /// The marketplace's id of seller `index`: six to nine digits.
    pub fn seller_id(&self, index: u64) -> String {
        self.decimal(Kind::SellerId, SELLER_IDS, index).to_string()
    }

    /// The `index`th value of a permutation of `range` (cycle walking over
    /// the smallest even power of two that holds it).
    fn decimal(&self, kind: Kind, range: std::ops::Range<u64>, index: u64) -> u64 {
        let size = range.end - range.start;
        assert!(index < size, "index {index} outside a range of {size} ids");
        let bits = (u64::BITS - (size - 1).leading_zeros()).div_ceil(2);
        let feistel = Feistel::new(self.seed, kind, bits);
        let mut value = feistel.apply(index);
        while value >= size {
            value = feistel.apply(value);
        }
        range.start + value
    }
}

/// A balanced Feistel network over `2 * half_bits` bits.
struct Feistel {
    half_bits: u32,
    keys: [u64; ROUNDS],
}

impl Feistel {
    fn new(seed: u64, kind: Kind, half_bits: u32) -> Self {
        Feistel {
            half_bits,
            keys: std::array::from_fn(|round| key(seed, kind, round as u64)),
        }
    }

    fn apply(&self, value: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut left, mut right) = ((value >> self.half_bits) & mask, value & mask);
        for key in self.keys {
            (left, right) = (right, left ^ (mix(right ^ key) & mask));
        }
        (left << self.half_bits) | right
    }
}

fn key(seed: u64, kind: Kind, round: u64) -> u64 {
    mix(mix(seed ^ ((kind as u64) << 56)) ^ round)
}

/// SplitMix64's finalizer: every input bit affects every output bit.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sorted, with each value once: `values` were all distinct.
    fn distinct(mut values: Vec<u64>) -> bool {
        let len = values.len();
        values.sort_unstable();
        values.dedup();
        values.len() == len
    }

    #[test]
    fn feistel_is_a_permutation_of_its_whole_domain() {
        let feistel = Feistel::new(7, Kind::ExternalId, 6);
        let mut seen: Vec<u64> = (0..1 << 12).map(|i| feistel.apply(i)).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..1 << 12).collect::<Vec<_>>());
    }

    #[test]
    fn ten_million_products_get_distinct_ids_in_range_for_several_seeds() {
        // Seed 3 collided after 67,000 products when ids were drawn at random.
        for (seed, products) in [(3, 10_000_000), (0, 1_000_000), (u64::MAX, 1_000_000)] {
            let ids = Ids::new(seed);
            let external: Vec<u64> = (0..products)
                .map(|i| ids.decimal(Kind::ExternalId, EXTERNAL_IDS, i))
                .collect();
            assert!(external.iter().all(|id| EXTERNAL_IDS.contains(id)));
            assert!(distinct(external), "external ids of seed {seed}");
            let uuids: Vec<u64> = (0..products)
                .map(|i| {
                    let bytes = ids.uuid(Kind::Product, i).into_bytes();
                    u64::from_be_bytes([
                        bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[9],
                        bytes[10],
                    ])
                })
                .collect();
            assert!(distinct(uuids), "product uuids of seed {seed}");
            let sellers: Vec<u64> = (0..products / 40)
                .map(|i| ids.decimal(Kind::SellerId, SELLER_IDS, i))
                .collect();
            assert!(sellers.iter().all(|id| SELLER_IDS.contains(id)));
            assert!(distinct(sellers), "seller ids of seed {seed}");
        }
    }

    #[test]
    fn the_last_ids_of_the_range_are_reachable() {
        let ids = Ids::new(5);
        let last = EXTERNAL_IDS.end - EXTERNAL_IDS.start - 1;
        assert!(EXTERNAL_IDS.contains(&ids.decimal(Kind::ExternalId, EXTERNAL_IDS, last)));
    }

    #[test]
    fn ids_are_version_4_and_depend_on_seed_and_kind() {
        let (a, b) = (Ids::new(1), Ids::new(2));
        let id = a.uuid(Kind::Product, 0);
        assert_eq!(id.get_version_num(), 4);
        assert_eq!(id.get_variant(), uuid::Variant::RFC4122);
        assert_ne!(id, b.uuid(Kind::Product, 0));
        assert_ne!(id, a.uuid(Kind::Seller, 0));
        assert_ne!(a.external_id(0), b.external_id(0));
        assert_eq!(a.external_id(0).len(), 9);
    }
}
