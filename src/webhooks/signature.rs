//! Signing secrets and the `X-Vitrina-Signature` header.
//!
//! The header is `t=<unix seconds>,v1=<lowercase hex HMAC-SHA256>` of the
//! string `<t>.<raw body>`, keyed with the bytes of the secret string
//! (`whsec_` prefix included). It is the scheme Stripe's libraries verify,
//! so receivers can use those, or a few lines of plain HMAC.

use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;

const SECRET_PREFIX: &str = "whsec_";

/// A new signing secret: `whsec_` and 32 random bytes in hex.
pub fn generate_secret() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    format!("{SECRET_PREFIX}{}", hex::encode(bytes))
}

/// The `X-Vitrina-Signature` value for `body` sent at `timestamp`: one `v1`
/// per secret, in the order given (during a rotation's overlap the new
/// secret, then the old; receivers accept the header if any `v1` verifies).
pub fn signature_header(secrets: &[&str], timestamp: i64, body: &[u8]) -> String {
    let mut header = format!("t={timestamp}");
    for secret in secrets {
        header.push_str(",v1=");
        header.push_str(&sign(secret, timestamp, body));
    }
    header
}

fn sign(secret: &str, timestamp: i64, body: &[u8]) -> String {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes a key of any length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_an_independent_hmac() {
        // Computed with Python's hmac module.
        assert_eq!(
            signature_header(&["whsec_test"], 1_700_000_000, br#"{"a":1}"#),
            "t=1700000000,v1=38877139021993b830af32feea6e18a8da83eb2f6e49ee50bd9e4cf4ca4d3789"
        );
    }

    #[test]
    fn signs_with_each_secret_in_order() {
        let body = br#"{"a":1}"#;
        let one = |secret| signature_header(&[secret], 1_700_000_000, body);
        let v1 = |header: String| header.split_once(",v1=").map(|(_, v)| v.to_owned());
        assert_eq!(
            signature_header(&["whsec_new", "whsec_old"], 1_700_000_000, body),
            format!(
                "t=1700000000,v1={},v1={}",
                v1(one("whsec_new")).unwrap(),
                v1(one("whsec_old")).unwrap()
            )
        );
    }

    #[test]
    fn secrets_are_prefixed_and_random() {
        let (a, b) = (generate_secret(), generate_secret());
        assert!(a.starts_with(SECRET_PREFIX));
        assert_eq!(a.len(), SECRET_PREFIX.len() + 64);
        assert_ne!(a, b);
    }
}
