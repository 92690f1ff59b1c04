//! `vitrina-healthcheck`, the container image's HEALTHCHECK: exit 0 when
//! `/readyz` answers 200, 1 otherwise.

use std::process::{Command, Output};

use crate::helpers::TestApp;

fn healthcheck(bind: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vitrina-healthcheck"))
        .env("VITRINA_BIND", bind)
        .output()
        .expect("run vitrina-healthcheck")
}

#[tokio::test]
async fn the_healthcheck_passes_on_200_from_readyz_and_fails_when_draining_or_unreachable() {
    let app = TestApp::spawn().await;
    let port = app.addr.port();
    // As the image binds: on every address, asked on loopback.
    let bind = format!("0.0.0.0:{port}");
    let probe = tokio::task::spawn_blocking(move || healthcheck(&bind));
    let out = probe.await.unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "HTTP/1.1 200 OK\n");

    app.state.draining.start();
    let bind = format!("127.0.0.1:{port}");
    let out = tokio::task::spawn_blocking(move || healthcheck(&bind))
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "draining: {out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("HTTP/1.1 503 "),
        "{out:?}"
    );

    // A port the OS just handed out and took back: nothing listens there.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap();
    let out = healthcheck(&closed.to_string());
    assert_eq!(out.status.code(), Some(1), "nothing listening: {out:?}");
}
