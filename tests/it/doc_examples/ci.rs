//! The examples that are CI's own steps (the test suite, the browser
//! checks, the container image): each command is paired with the line of
//! a CI script that runs it, and the pairing says what differs and why.
//! The test fails when a documented command has no pairing, or when CI no
//! longer has the line it is paired with.

use super::{Check, blocks_checked_by};
use crate::helpers::repository_file;

/// The scripts CI runs: `.ci/run`, what it calls, and the npm scripts.
const CI_FILES: [&str; 3] = [".ci/run", "container/check", "web/package.json"];

/// A documented command, the CI line that runs it, and what differs.
struct Pairing {
    documented: &'static str,
    ci_line: &'static str,
    difference: &'static str,
}

const PAIRINGS: [Pairing; 9] = [
    Pairing {
        documented: "cargo test --workspace",
        ci_line: "env -u TEST_DATABASE_URL cargo test --workspace",
        difference: "none on SQLite; the PostgreSQL pass sets TEST_DATABASE_URL",
    },
    Pairing {
        documented: ".ci/run",
        ci_line: "step \"cargo fmt --check\"",
        difference: "none: it is CI itself",
    },
    Pairing {
        documented: "(cd web && npm ci && npm run check)",
        ci_line: "(cd web && npm ci --no-audit --no-fund && npm run check)",
        difference: "CI skips npm's audit and funding notices",
    },
    Pairing {
        documented: "cargo build && (cd web && npm test)",
        ci_line: "(cd web && env -u TEST_DATABASE_URL npm test)",
        difference: "the binary is the one `cargo test` built just before",
    },
    Pairing {
        documented: "container/build",
        ci_line: "container/build --binaries target/debug --tag localhost/vitrina:ci",
        difference: "CI stages the test build instead of building a release",
    },
    Pairing {
        documented: "podman run -d --name vitrina -p 127.0.0.1:8080:8080 -v vitrina-data:/data localhost/vitrina:latest serve --demo",
        ci_line: "run --name \"$prefix-sqlite\" -v \"$prefix-data:/data\" -e VITRINA_BIND=\"127.0.0.1:$port\" \"$image\" serve --demo",
        difference: "the host's network and a free port: this sandbox cannot publish ports",
    },
    Pairing {
        documented: "podman logs vitrina | grep 'demo API key'",
        ci_line: "demo_key() { podman logs \"$1\" 2>/dev/null | sed -n 's/^demo API key: //p' | tail -1; }",
        difference: "the key is cut out of the line to be used",
    },
    Pairing {
        documented: "docker compose up",
        ci_line: "if resolved=$(\"${PODMAN_COMPOSE:?the podman-compose to read compose.yaml with}\" -f compose.yaml config); then",
        difference: "compose.yaml is read, and its replicas run on this machine's PostgreSQL and \
                     Redis: no registry serves postgres:15 and redis:7 here",
    },
    Pairing {
        documented: "npx openapi-typescript http://127.0.0.1:8080/v1/openapi.json -o rest-v1.ts",
        ci_line: "\"check:generate\": \"openapi-typescript ../openapi/rest-v1.json -o generated/rest-v1.ts",
        difference: "the checked-in document, which a test keeps equal to the served one",
    },
];

#[test]
fn every_ci_example_is_a_step_ci_takes() {
    let scripts: Vec<String> = CI_FILES.iter().map(|f| repository_file(f)).collect();
    let mut missing = Vec::new();
    for pairing in &PAIRINGS {
        assert!(!pairing.difference.is_empty());
        if !scripts
            .iter()
            .any(|s| s.lines().any(|l| l.contains(pairing.ci_line)))
        {
            missing.push(format!(
                "`{}` (for `{}`)",
                pairing.ci_line, pairing.documented
            ));
        }
    }
    assert!(missing.is_empty(), "no CI script has: {missing:?}");

    let mut unpaired = Vec::new();
    let mut documented = Vec::new();
    for block in blocks_checked_by(Check::CiStep) {
        for command in block.commands() {
            match PAIRINGS.iter().find(|p| p.documented == command) {
                Some(pairing) => documented.push(pairing.documented),
                None => unpaired.push(format!("{}: `{command}`", block.at)),
            }
        }
    }
    assert!(unpaired.is_empty(), "CI runs none of: {unpaired:?}");
    let stale: Vec<&str> = PAIRINGS
        .iter()
        .map(|p| p.documented)
        .filter(|d| !documented.contains(d))
        .collect();
    assert!(
        stale.is_empty(),
        "pairings for commands the docs no longer show: {stale:?}"
    );
}
