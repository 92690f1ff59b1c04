//! `vitrina-healthcheck`: the container image's `HEALTHCHECK`. It asks the
//! Vitrina of its own container `GET /readyz` and exits 0 on a 200, 1
//! otherwise (draining, database unavailable, not listening). The image has
//! no shell and no curl, so the check is this small program of its own.
//!
//! It reads the address from `VITRINA_BIND` as `vitrina serve` does (default
//! `127.0.0.1:8080`); an unspecified address (`0.0.0.0`, `[::]`) is asked
//! on loopback.

use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::process::ExitCode;
use std::time::Duration;

/// Longest wait to connect, and for each read or write: a health check that
/// hangs is worse than one that fails.
const TIMEOUT: Duration = Duration::from_secs(3);

fn main() -> ExitCode {
    let bind = std::env::var("VITRINA_BIND").unwrap_or_else(|_| "127.0.0.1:8080".into());
    let Ok(bind) = bind.parse::<SocketAddr>() else {
        eprintln!("VITRINA_BIND is not an address: {bind}");
        return ExitCode::FAILURE;
    };
    match status_line(probe_address(bind)) {
        Ok(line) if line.starts_with("HTTP/1.1 200 ") => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Ok(line) => {
            println!("{line}");
            ExitCode::FAILURE
        }
        Err(e) => {
            println!("GET /readyz on {bind}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Where to ask: the bound address, or loopback for an unspecified one.
fn probe_address(bind: SocketAddr) -> SocketAddr {
    let ip = match bind.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, bind.port())
}

/// The status line of `GET /readyz` at `addr`.
fn status_line(addr: SocketAddr) -> io::Result<String> {
    let mut stream = TcpStream::connect_timeout(&addr, TIMEOUT)?;
    stream.set_read_timeout(Some(TIMEOUT))?;
    stream.set_write_timeout(Some(TIMEOUT))?;
    stream.write_all(b"GET /readyz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")?;
    let mut head = [0u8; 256];
    let mut read = 0;
    // The status line ends at the first CRLF; a short read may stop before it.
    while read < head.len() && !head[..read].contains(&b'\n') {
        match stream.read(&mut head[read..])? {
            0 => break,
            n => read += n,
        }
    }
    let text = String::from_utf8_lossy(&head[..read]);
    Ok(text.lines().next().unwrap_or_default().to_owned())
}
