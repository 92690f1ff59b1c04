//! A GraphQL WebSocket client for tests (graphql-transport-ws).

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::{Message, client::IntoClientRequest};

use crate::helpers::TestApp;

pub type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Opens `/graphql/ws` and sends `connection_init` with `key`.
pub async fn connect(app: &TestApp, key: &str) -> Socket {
    let mut socket = open(app).await;
    init(&mut socket, key).await;
    socket
}

/// Opens `/graphql/ws`, saying nothing yet.
pub async fn open(app: &TestApp) -> Socket {
    open_at(app.addr).await
}

/// Opens `/graphql/ws` of the server at `addr` (a binary the test started).
pub async fn open_at(addr: std::net::SocketAddr) -> Socket {
    open_speaking(addr, "graphql-transport-ws").await
}

/// Opens `/graphql/ws` of the server at `addr` in `protocol`
/// (`graphql-transport-ws`, or the older `graphql-ws`).
pub async fn open_speaking(addr: std::net::SocketAddr, protocol: &str) -> Socket {
    let mut request = format!("ws://{addr}/graphql/ws")
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("Sec-WebSocket-Protocol", protocol.parse().unwrap());
    let (socket, _) = tokio_tungstenite::connect_async(request)
        .await
        .expect("websocket");
    socket
}

/// Sends `connection_init` with `key`.
pub async fn init(socket: &mut Socket, key: &str) {
    let init = json!({ "type": "connection_init", "payload": { "Authorization": format!("Bearer {key}") } });
    socket.send(Message::text(init.to_string())).await.unwrap();
}

/// The next JSON message, within 10 seconds; `None` once the socket closed
/// (or nothing came).
pub async fn next(socket: &mut Socket) -> Option<Value> {
    loop {
        let message = tokio::time::timeout(std::time::Duration::from_secs(10), socket.next())
            .await
            .ok()??
            .ok()?;
        if let Message::Text(text) = message {
            return serde_json::from_str(&text).ok();
        }
    }
}

/// Sends an operation (`subscribe`) under `id`.
pub async fn send(socket: &mut Socket, id: &str, query: &str) {
    let subscribe = json!({ "id": id, "type": "subscribe", "payload": { "query": query } });
    socket
        .send(Message::text(subscribe.to_string()))
        .await
        .unwrap();
}
