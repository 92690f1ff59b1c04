//! `vitrina serve` as a child process, for the tests that need the real
//! binary: signals, several replicas, the metrics listener, what it prints.

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process};

/// Longest wait for anything the server prints or logs.
const BOUND: Duration = Duration::from_secs(120);

/// A running `vitrina serve` on a free loopback port: what it prints
/// (stdout) and logs (stderr) are read as they come, so it never blocks on
/// a full pipe. Killed when dropped.
pub struct Serve {
    child: Child,
    /// `http://<addr>`.
    pub base: String,
    pub addr: SocketAddr,
    printed: mpsc::Receiver<String>,
    log: mpsc::Receiver<String>,
    /// The log lines read so far.
    pub logged: Vec<String>,
}

/// Sends each line of `from` to the returned receiver, on a thread of its own.
fn lines_of(from: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (line, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for text in BufReader::new(from).lines().map_while(Result::ok) {
            let _ = line.send(text);
        }
    });
    lines
}

impl Serve {
    /// Starts `serve` over `db_url` with `args` and the environment `env`
    /// (`RUST_LOG` unset unless `env` sets it).
    pub fn start(db_url: &str, args: &[&str], env: &[(&str, &str)]) -> Serve {
        let mut child = Command::new(env!("CARGO_BIN_EXE_vitrina"))
            .args(["serve", "--bind", "127.0.0.1:0"])
            .args(args)
            .env("DATABASE_URL", db_url)
            .env_remove("RUST_LOG")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start vitrina serve");
        let printed = lines_of(child.stdout.take().expect("stdout"));
        let log = lines_of(child.stderr.take().expect("stderr"));
        let mut serve = Serve {
            child,
            base: String::new(),
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            printed,
            log,
            logged: Vec::new(),
        };
        serve.base = serve.line_after("listening on ");
        serve.addr = serve
            .base
            .trim_start_matches("http://")
            .parse()
            .expect("an address");
        serve
    }

    /// Waits for the printed line that starts with `prefix`; returns the rest.
    pub fn line_after(&mut self, prefix: &str) -> String {
        let deadline = Instant::now() + BOUND;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.printed.recv_timeout(left) {
                Ok(line) => {
                    if let Some(rest) = line.strip_prefix(prefix) {
                        return rest.to_owned();
                    }
                }
                Err(e) => panic!(
                    "serve never printed {prefix:?}: {e}; log: {:#?}",
                    self.logged
                ),
            }
        }
    }

    /// Waits until the server logs a line containing `text`.
    pub fn wait_for_log(&mut self, text: &str) {
        let deadline = Instant::now() + BOUND;
        while !self.logged(text) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.log.recv_timeout(left) {
                Ok(line) => self.logged.push(line),
                Err(_) => panic!("never logged {text:?}: {:#?}", self.logged),
            }
        }
    }

    /// Whether a log line read so far contains `text`.
    pub fn logged(&self, text: &str) -> bool {
        self.logged.iter().any(|l| l.contains(text))
    }

    /// The process id, to read its `/proc` entries.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn signal(&self, signal: Signal) {
        kill_process(Pid::from_child(&self.child), signal).expect("signal the server");
    }

    /// Waits for the process to end by itself; its whole log is then in
    /// `logged`.
    pub fn exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + BOUND;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "still running: {:#?}",
                self.logged
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        self.logged.extend(self.log.iter());
        status
    }

    /// Kills the process; returns its whole log.
    pub fn kill(&mut self) -> Vec<String> {
        self.child.kill().ok();
        self.child.wait().ok();
        self.logged.extend(self.log.iter());
        self.logged.clone()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}
