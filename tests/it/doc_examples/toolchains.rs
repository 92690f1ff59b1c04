//! The examples other languages' tools run: the signature checks in
//! Python (plain and with Stripe's library), JavaScript and Go, each run as
//! written over signatures the server's own code makes; and the Prometheus
//! configuration and alert rules, checked by `promtool`.
//!
//! `cargo test` alone cannot install Python's `stripe` package, Node.js,
//! Go or Prometheus (tests reach loopback only), so these are ignored by
//! default: `.ci/run` installs the tools and runs them by name.

use std::path::Path;
use std::process::{Command, Stdio};

use chrono::Utc;
use serde_json::json;
use vitrina::webhooks::signature::signature_header;

use super::{Block, Check, blocks_checked_by};
use crate::helpers::repository_file;

/// The interpreter with the `stripe` package (see `webhooks::rotation`).
fn python() -> String {
    std::env::var("VITRINA_TEST_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Runs `program` in `folder` with `input` on stdin; its stdout.
fn run(program: &str, args: &[&str], folder: &Path, input: &str) -> Result<String, String> {
    let mut child = Command::new(program)
        .args(args)
        .current_dir(folder)
        .env("GOCACHE", folder.join("go-cache"))
        .env("GOPATH", folder.join("go-path"))
        .env("GOPROXY", "off")
        .env("GOFLAGS", "-mod=mod")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {program} ({e}): see .ci/run for the tools"));
    use std::io::Write;
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write stdin");
    let out = child.wait_with_output().expect("the tool's end");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    match out.status.success() {
        true => Ok(stdout),
        false => Err(format!("{stdout}{}", String::from_utf8_lossy(&out.stderr))),
    }
}

/// A signed body, and whether a verifier given `secret` must accept it.
struct Case {
    body: String,
    header: String,
    secret: &'static str,
    accept: bool,
}

/// Headers the server's code signs: the value the docs quote, a fresh one,
/// one of a rotation's overlap (either secret), and what must be refused.
fn cases() -> Vec<Case> {
    let quoted = signature_header(&["whsec_test"], 1_700_000_000, br#"{"a":1}"#);
    let docs = repository_file("docs/webhooks.md");
    assert!(docs.contains(&quoted), "docs/webhooks.md quotes {quoted}");
    let body = r#"{"event":"ping","user_id":"u","webhook_id":"w"}"#;
    let now = Utc::now().timestamp();
    let fresh = signature_header(&["whsec_new"], now, body.as_bytes());
    let rotated = signature_header(&["whsec_new", "whsec_old"], now, body.as_bytes());
    let earlier = fresh.replace(&format!("t={now}"), &format!("t={}", now - 1));
    let case = |body: &str, header: &str, secret, accept| Case {
        body: body.to_owned(),
        header: header.to_owned(),
        secret,
        accept,
    };
    vec![
        case(r#"{"a":1}"#, &quoted, "whsec_test", true),
        case(r#"{"a":2}"#, &quoted, "whsec_test", false),
        case(r#"{"a":1}"#, &quoted, "whsec_other", false),
        case(body, &fresh, "whsec_new", true),
        case(body, &earlier, "whsec_new", false),
        case(body, &rotated, "whsec_new", true),
        case(body, &rotated, "whsec_old", true),
        case(body, &rotated, "whsec_neither", false),
    ]
}

/// The cases as the drivers read them, and the answers they must print.
fn cases_json() -> (String, Vec<bool>) {
    let cases = cases();
    let input = cases
        .iter()
        .map(|c| json!({ "body": c.body, "header": c.header, "secret": c.secret }))
        .collect::<Vec<_>>();
    (
        json!(input).to_string(),
        cases.iter().map(|c| c.accept).collect(),
    )
}

const PYTHON_DRIVER: &str = "\nimport json, sys\n\
    cases = json.load(sys.stdin)\n\
    print(json.dumps([verify(c['body'].encode(), c['header'], c['secret']) for c in cases]))\n";

const JS_DRIVER: &str = "\nconst cases = JSON.parse(require(\"node:fs\").readFileSync(0, \"utf8\"));\n\
    console.log(JSON.stringify(cases.map((c) => verify(Buffer.from(c.body), c.header, c.secret))));\n";

const GO_DRIVER: &str = "package webhook\n\n\
    import (\n\t\"encoding/json\"\n\t\"fmt\"\n\t\"os\"\n\t\"testing\"\n)\n\n\
    func TestCases(t *testing.T) {\n\
    \tvar cases []struct{ Body, Header, Secret string }\n\
    \tdata, err := os.ReadFile(\"cases.json\")\n\
    \tif err == nil {\n\t\terr = json.Unmarshal(data, &cases)\n\t}\n\
    \tif err != nil {\n\t\tt.Fatal(err)\n\t}\n\
    \tanswers := []bool{}\n\
    \tfor _, c := range cases {\n\t\tanswers = append(answers, Verify([]byte(c.Body), c.Header, c.Secret))\n\t}\n\
    \tout, _ := json.Marshal(answers)\n\
    \tfmt.Println(\"ANSWERS \" + string(out))\n}\n";

/// What a verifier answered for each case.
fn answers_of(block: &Block, folder: &Path, input: &str) -> Vec<bool> {
    let printed = match block.kind.as_str() {
        "python" => {
            let script = folder.join("verify.py");
            std::fs::write(&script, format!("{}{PYTHON_DRIVER}", block.text)).expect("write");
            run(&python(), &["verify.py"], folder, input)
        }
        "js" => {
            std::fs::write(
                folder.join("verify.js"),
                format!("{}{JS_DRIVER}", block.text),
            )
            .expect("write");
            run("node", &["verify.js"], folder, input)
        }
        "go" => {
            std::fs::write(
                folder.join("go.mod"),
                "module example.com/webhook\n\ngo 1.19\n",
            )
            .expect("write");
            std::fs::write(folder.join("webhook.go"), &block.text).expect("write");
            std::fs::write(folder.join("webhook_test.go"), GO_DRIVER).expect("write");
            // `go test` gives its test no stdin.
            std::fs::write(folder.join("cases.json"), input).expect("write");
            run(
                "go",
                &["test", "-count=1", "-v", "-run", "TestCases"],
                folder,
                input,
            )
            .map(|out| {
                out.lines()
                    .find_map(|l| l.strip_prefix("ANSWERS "))
                    .unwrap_or_default()
                    .to_owned()
            })
        }
        other => panic!("{}: no driver for {other}", block.at),
    };
    let printed = printed.unwrap_or_else(|why| panic!("{}: {why}", block.at));
    serde_json::from_str(printed.trim()).unwrap_or_else(|e| panic!("{}: {e}: {printed}", block.at))
}

/// Runs the Stripe example as written, with the names it leaves to the
/// reader (`raw_body`, `request`) defined, over a fresh signature with the
/// secret it shows; `Err` is what Python printed when it raised.
fn stripe_example(
    block: &Block,
    folder: &Path,
    body: &str,
    signed_body: &str,
) -> Result<(), String> {
    let header = signature_header(
        &["whsec_..."],
        Utc::now().timestamp(),
        signed_body.as_bytes(),
    );
    let prelude = format!(
        "import types\nraw_body = {body:?}.encode()\n\
         request = types.SimpleNamespace(headers={{\"X-Vitrina-Signature\": {header:?}}})\n"
    );
    std::fs::write(
        folder.join("stripe_example.py"),
        format!("{prelude}{}\n", block.text),
    )
    .expect("write");
    run(&python(), &["stripe_example.py"], folder, "").map(|_| ())
}

#[test]
#[ignore = "needs Python with stripe, Node.js and Go: .ci/run installs them and runs this"]
fn every_signature_check_accepts_real_signatures_and_refuses_the_rest() {
    let (input, expected) = cases_json();
    for block in blocks_checked_by(Check::Verifier) {
        let folder = tempfile::tempdir().expect("a folder");
        if block.text.contains("import stripe") {
            let body = r#"{"event":"ping"}"#;
            stripe_example(&block, folder.path(), body, body)
                .unwrap_or_else(|why| panic!("{}: refused a real signature: {why}", block.at));
            let refused = stripe_example(&block, folder.path(), body, r#"{"event":"pong"}"#)
                .expect_err("another body is refused");
            assert!(
                refused.contains("SignatureVerificationError"),
                "{}: {refused}",
                block.at
            );
        } else {
            assert_eq!(
                answers_of(&block, folder.path(), &input),
                expected,
                "{}",
                block.at
            );
        }
    }
}

/// The file a Prometheus example is, as its first line names it.
fn prometheus_file(block: &Block) -> String {
    let first = block.text.lines().next().unwrap_or_default();
    let name = first
        .trim_start_matches('#')
        .split_whitespace()
        .next()
        .unwrap_or_default();
    assert!(
        name.ends_with(".yml"),
        "{}: the first line names its file",
        block.at
    );
    name.to_owned()
}

#[test]
#[ignore = "needs promtool (Debian's prometheus): .ci/run installs it and runs this"]
fn promtool_accepts_the_prometheus_configuration_and_alert_rules() {
    let folder = tempfile::tempdir().expect("a folder");
    for block in blocks_checked_by(Check::Prometheus) {
        let file = prometheus_file(&block);
        std::fs::write(folder.path().join(&file), &block.text).expect("write");
        let check = if block.text.contains("groups:") {
            "rules"
        } else {
            "config"
        };
        run("promtool", &["check", check, &file], folder.path(), "")
            .unwrap_or_else(|why| panic!("{}: promtool check {check}: {why}", block.at));
    }
}
