//! A client's `X-Request-Id` is echoed and logged only when it is short and
//! of safe characters; any other is replaced by a new UUID, so a client
//! can neither fill the logs nor forge fields in them. The real binary
//! serves, so that its log can be read.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

use crate::helpers::TestDb;
use crate::serve::Serve;

/// Sends one GET /healthz with `id` as its raw `X-Request-Id` bytes; the
/// status and the id echoed.
fn ask(addr: SocketAddr, id: &[u8]) -> (u16, Option<String>) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    let mut request =
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Request-Id: ".to_vec();
    request.extend_from_slice(id);
    request.extend_from_slice(b"\r\n\r\n");
    stream.write_all(&request).expect("send");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).expect("read the answer");
    let answer = String::from_utf8_lossy(&answer);
    let head = answer.split("\r\n\r\n").next().unwrap_or_default();
    let status = head
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let echoed = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("x-request-id")
            .then(|| value.trim().to_owned())
    });
    (status, echoed)
}

fn is_uuid(id: &str) -> bool {
    uuid::Uuid::parse_str(id).is_ok()
}

/// Ids a client could use to flood a log line or forge its fields, each
/// carrying the word `forged` so the log can be searched for it.
fn hostile_ids() -> Vec<Vec<u8>> {
    let mut ids: Vec<Vec<u8>> = vec![
        // 60 KB, as the attack sent.
        format!("forged{}", "a".repeat(60 * 1024)).into_bytes(),
        // One character over the bound, of safe characters.
        format!("forged{}", "a".repeat(123)).into_bytes(),
        b"x\" status=500 forged=\"1".to_vec(),
        b"x request_id=forged".to_vec(),
        b"forged=1".to_vec(),
        b"forged\"".to_vec(),
        b"forged'".to_vec(),
        b"forged\tlevel=ERROR".to_vec(),
        b"forged\x1b[31mred\x1b[0m".to_vec(),
        b"forged\nrequest_id=x".to_vec(),
        b"forged\r\n status=500".to_vec(),
        b"forged\x00".to_vec(),
        "forged-\u{0438}\u{0434}".as_bytes().to_vec(),
        "forged\u{202e}".as_bytes().to_vec(),
        b"forged\xff\xfe".to_vec(),
        b"{\"forged\":1}".to_vec(),
        b"forged,x".to_vec(),
        b"forged;x".to_vec(),
        b"forged/../x".to_vec(),
    ];
    // Every printable ASCII character outside the accepted set.
    for byte in (0x20u8..0x7f).filter(|b| !b.is_ascii_alphanumeric() && !b"-_.:".contains(b)) {
        ids.push([b"forged".as_slice(), &[byte], b"x"].concat());
    }
    ids
}

#[tokio::test]
async fn hostile_request_ids_are_replaced_by_new_ones_and_never_reach_the_log() {
    let db = TestDb::new().await;
    let mut server = Serve::start(&db.url, &[], &[("RUST_LOG", "info")]);
    let mut replaced = Vec::new();
    for id in hostile_ids() {
        let (status, echoed) = ask(server.addr, &id);
        let shown = String::from_utf8_lossy(&id[..id.len().min(40)]).into_owned();
        match status {
            // Not a header value at all: hyper refuses the request.
            400 => assert!(echoed.is_none(), "{shown:?} echoed in a 400"),
            200 => {
                let echoed = echoed.unwrap_or_else(|| panic!("{shown:?}: no id echoed"));
                let start: String = echoed.chars().take(40).collect();
                assert!(is_uuid(&echoed), "{shown:?} echoed as {start:?}...");
                replaced.push(echoed);
            }
            other => panic!("{shown:?}: status {other}"),
        }
    }
    assert!(
        replaced.len() > 20,
        "most of these are header values: {replaced:?}"
    );
    // Kept: safe characters, up to the bound.
    let longest = "a".repeat(126) + ":1";
    for id in ["client-trace-42", "0af76519.16cd_43dd:8448-eb21", &longest] {
        let (status, echoed) = ask(server.addr, id.as_bytes());
        assert_eq!((status, echoed.as_deref()), (200, Some(id)));
    }
    server.wait_for_log(&format!("request_id={longest}"));
    for id in &replaced {
        server.wait_for_log(&format!("request_id={id}"));
    }
    let log = server.kill();
    let forged: Vec<_> = log.iter().filter(|line| line.contains("forged")).collect();
    assert!(
        forged.is_empty(),
        "a client's id reached the log: {forged:#?}"
    );
}
