//! Kept bodies, deflated when that pays, and served as they are kept to
//! clients that take gzip.
//!
//! JSON answers deflate four to five times (the demo's dashboard of 20
//! products, 14.1 kB, goes out as 3.5 kB of gzip), so the cache holds that
//! many more of them in its budget. A client that accepts gzip (every browser) is sent the
//! deflated bytes in a gzip frame, with no work beyond a copy: the
//! compression layer, which would otherwise compress the answer again on
//! every hit, leaves an encoded response alone. Any other client is sent
//! the body inflated (measured here on a 17 kB page shaped like it: about
//! 45 us, against some 90 us to deflate it, paid once when it is kept).
//! Both run on the request's runtime thread, so an answer above
//! [`MAX_DEFLATED`] is kept as it is: 6 MB (a tenth of the default cache)
//! took 31 ms to deflate and 17 ms to inflate, time no other request on
//! that thread could use.
//!
//! A GraphQL answer ends with its caller's `extensions` (the rate limit it
//! stands at), so a kept body is a head followed by a tail given on each
//! hit. The head is kept as DEFLATE blocks ended by a sync flush (not
//! final); the tail is deflated on its own into blocks that end the stream.
//! Blocks never need what came before them (a compressor that saw none of
//! it refers to none of it), so the two read as one stream, and the gzip
//! trailer's CRC-32 carries on from the head's kept one over the tail.

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, header};
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

/// Bodies shorter than this are kept as they are: deflating them saves too
/// little for the work, and the compression layer leaves them alone too
/// when they are very short.
const MIN_DEFLATED: usize = 1024;

/// Bodies longer than this are kept as they are: deflating one takes about
/// a millisecond and a half.
const MAX_DEFLATED: usize = 256 * 1024;

/// A gzip member's header (RFC 1952 2.3): magic, DEFLATE, no flags, no
/// time, no extra flags, unknown system.
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];

/// The head of a kept body.
#[derive(Debug)]
pub struct Packed(Form);

#[derive(Debug)]
enum Form {
    Plain(Bytes),
    Deflated {
        /// DEFLATE blocks of the head, ending on a byte boundary, not final.
        blocks: Bytes,
        /// CRC-32 and length of the head as it was.
        crc: u32,
        len: usize,
    },
}

impl Packed {
    /// Keeps `head`: deflated if that makes it a quarter smaller at least.
    pub fn new(head: Bytes) -> Packed {
        if !(MIN_DEFLATED..=MAX_DEFLATED).contains(&head.len()) {
            return Packed(Form::Plain(head));
        }
        let blocks = deflate(&head, FlushCompress::Sync);
        if blocks.len() > head.len() / 4 * 3 {
            return Packed(Form::Plain(head));
        }
        Packed(Form::Deflated {
            blocks: blocks.into(),
            crc: crc32fast::hash(&head),
            len: head.len(),
        })
    }

    /// The bytes it takes in memory.
    pub fn bytes(&self) -> usize {
        match &self.0 {
            Form::Plain(head) => head.len(),
            Form::Deflated { blocks, .. } => blocks.len(),
        }
    }

    /// The body, the head followed by `tail`, to answer a request sent with
    /// `request` headers: gzip-encoded if it is kept deflated and the
    /// client takes gzip (then `response` gets `Content-Encoding` and
    /// `Vary`), else as it is.
    pub fn body(&self, tail: &[u8], request: &HeaderMap, response: &mut HeaderMap) -> Bytes {
        match &self.0 {
            Form::Plain(head) if tail.is_empty() => head.clone(),
            Form::Plain(head) => [head.as_ref(), tail].concat().into(),
            Form::Deflated { blocks, crc, len } if accepts_gzip(request) => {
                response.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
                response.append(header::VARY, HeaderValue::from_static("accept-encoding"));
                gzip(blocks, (*crc, *len), tail).into()
            }
            Form::Deflated { blocks, len, .. } => {
                let mut body = Vec::with_capacity(len + tail.len());
                inflate(blocks, &mut body);
                body.extend_from_slice(tail);
                body.into()
            }
        }
    }
}

/// A gzip member of the head kept as `blocks` (with its CRC-32 and length)
/// followed by `tail`.
fn gzip(blocks: &[u8], (crc, len): (u32, usize), tail: &[u8]) -> Vec<u8> {
    let end = deflate(tail, FlushCompress::Finish);
    let mut crc = crc32fast::Hasher::new_with_initial_len(crc, len as u64);
    crc.update(tail);
    let mut member = Vec::with_capacity(GZIP_HEADER.len() + blocks.len() + end.len() + 8);
    member.extend_from_slice(&GZIP_HEADER);
    member.extend_from_slice(blocks);
    member.extend_from_slice(&end);
    member.extend_from_slice(&crc.finalize().to_le_bytes());
    // ISIZE: the length modulo 2^32.
    member.extend_from_slice(&((len + tail.len()) as u32).to_le_bytes());
    member
}

/// `input` as raw DEFLATE blocks, fast: ending on a byte boundary
/// (`Sync`) or ending the stream (`Finish`).
fn deflate(input: &[u8], flush: FlushCompress) -> Vec<u8> {
    let mut compress = Compress::new(Compression::fast(), false);
    let mut out = Vec::with_capacity(input.len() / 4 + 64);
    loop {
        let read = compress.total_in() as usize;
        // Only a stream already finished is refused, and each is new here.
        let status = compress
            .compress_vec(&input[read..], &mut out, flush)
            .unwrap_or(Status::StreamEnd);
        let done = match flush {
            FlushCompress::Finish => status == Status::StreamEnd,
            // All read, and room left: the flush is complete.
            _ => compress.total_in() as usize == input.len() && out.len() < out.capacity(),
        };
        if done {
            return out;
        }
        out.reserve(out.capacity().max(64));
    }
}

/// Appends to `out` what `blocks`, written by [`deflate`], hold; `out` has
/// room for all of it.
fn inflate(blocks: &[u8], out: &mut Vec<u8>) {
    let mut decompress = Decompress::new(false);
    while (decompress.total_in() as usize) < blocks.len() {
        let read = decompress.total_in() as usize;
        let before = out.len();
        out.reserve(1024);
        // Blocks this process wrote are never corrupt; stop rather than
        // loop should they be.
        let status = decompress.decompress_vec(&blocks[read..], out, FlushDecompress::Sync);
        if status.is_err() || (decompress.total_in() as usize == read && out.len() == before) {
            return;
        }
    }
}

/// Whether the `Accept-Encoding` of `request` takes gzip (RFC 9110 12.5.3):
/// named, or `*` when gzip is not named, with a nonzero weight.
fn accepts_gzip(request: &HeaderMap) -> bool {
    let mut star = false;
    for value in request.get_all(header::ACCEPT_ENCODING) {
        let Ok(value) = value.to_str() else { continue };
        for member in value.split(',') {
            let mut parts = member.split(';');
            let coding = parts.next().unwrap_or_default().trim();
            let weighted = parts.all(|parameter| {
                let (name, weight) = parameter.split_once('=').unwrap_or((parameter, ""));
                !name.trim().eq_ignore_ascii_case("q")
                    || weight.trim().parse::<f32>().is_ok_and(|q| q > 0.0)
            });
            if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
                return weighted;
            }
            star |= coding == "*" && weighted;
        }
    }
    star
}

/// `len` bytes that do not deflate (xorshift64), for tests.
#[cfg(test)]
pub fn noise(len: usize) -> Bytes {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect::<Vec<u8>>()
        .into()
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    fn accepting(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_str(value).unwrap(),
        );
        headers
    }

    fn json(rows: usize) -> Bytes {
        let rows: Vec<String> = (0..rows)
            .map(|i| {
                format!(
                    r#"{{"id":{i},"name":"Product {}","price":{}.5}}"#,
                    i * 7919 % 1000,
                    i * 31
                )
            })
            .collect();
        format!(r#"{{"data":[{}]"#, rows.join(",")).into()
    }

    fn gunzip(body: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(body)
            .read_to_end(&mut out)
            .expect("a whole gzip member");
        out
    }

    #[test]
    fn a_deflated_head_and_a_tail_read_as_one_gzip_member() {
        let head = json(200);
        let packed = Packed::new(head.clone());
        assert!(
            packed.bytes() * 3 < head.len(),
            "{} of {}",
            packed.bytes(),
            head.len()
        );
        for tail in [&b""[..], b",\"extensions\":{\"cost\":{\"cached\":true}}}"] {
            let whole = [head.as_ref(), tail].concat();
            let mut response = HeaderMap::new();
            let body = packed.body(tail, &accepting("gzip, br"), &mut response);
            assert_eq!(response[header::CONTENT_ENCODING], "gzip");
            assert_eq!(gunzip(&body), whole);
            // The trailer's length and CRC are checked by the decoder above.
            let mut response = HeaderMap::new();
            let body = packed.body(tail, &HeaderMap::new(), &mut response);
            assert!(response.is_empty());
            assert_eq!(body, whole);
        }
    }

    #[test]
    fn what_does_not_pay_or_would_hold_a_thread_is_kept_as_it_is() {
        let short = json(3);
        let long = json(MAX_DEFLATED / 30);
        assert!(long.len() > MAX_DEFLATED);
        for head in [short, noise(4096), long] {
            let packed = Packed::new(head.clone());
            assert_eq!(packed.bytes(), head.len());
            let mut response = HeaderMap::new();
            assert_eq!(packed.body(b"", &accepting("gzip"), &mut response), head);
            assert!(response.is_empty(), "left to the compression layer");
        }
    }

    #[test]
    fn gzip_is_taken_when_named_or_starred_with_a_weight_above_zero() {
        for taken in [
            "gzip",
            "br, GZIP;q=0.5",
            "x-gzip",
            "*",
            "deflate, *;q=0.1",
            "gzip; q=1",
        ] {
            assert!(accepts_gzip(&accepting(taken)), "{taken}");
        }
        for refused in [
            "",
            "br",
            "identity",
            "gzip;q=0",
            "gzip;q=0.0, *",
            "*;q=0",
            "gzip;q=x",
        ] {
            assert!(!accepts_gzip(&accepting(refused)), "{refused}");
        }
        assert!(!accepts_gzip(&HeaderMap::new()));
    }
}
