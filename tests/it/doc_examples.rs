//! Every example in the README and `docs/` is run by a test or a CI step,
//! so none can go stale. This module finds the fenced blocks and says how
//! each is checked ([`Check`]); a block no rule claims fails
//! [`every_example_is_checked`]. The checks are in the submodules:
//!
//! | submodule | blocks |
//! |---|---|
//! | `shell` | shell examples, run by bash against a demo server |
//! | `servers` | shell examples that start a server, run on other ports |
//! | `ci` | shell examples that are CI steps, found in `.ci/run` |
//! | `outputs` | what commands print (indented blocks), compared with the real thing |
//! | `payloads` | JSON, GraphQL and HTTP: sent, or compared with real ones |
//! | `toolchains` | signature checks in Python, JavaScript and Go; Prometheus files |
//!
//! `metrics.rs` finds each series the Prometheus examples name in a real
//! `/metrics` ([`prometheus_series`]).

mod ci;
mod outputs;
mod payloads;
mod servers;
mod shell;
mod toolchains;

use std::path::Path;

use crate::helpers::repository_file;

/// A fenced block of a Markdown file.
#[derive(Debug, Clone)]
pub struct Block {
    /// `file:line` of its opening fence.
    pub at: String,
    /// The word after the opening fence: `sh`, `json`...
    pub kind: String,
    /// Its lines, without the fences and the fence's indentation.
    pub text: String,
    /// The prose just before it.
    pub before: String,
}

impl Block {
    /// The shell commands of an `sh` block: comments dropped, lines joined
    /// where they end in `\`, blank lines skipped.
    pub fn commands(&self) -> Vec<String> {
        let mut commands = Vec::new();
        let mut pending = String::new();
        for line in self.text.lines() {
            let line = strip_comment(line).trim_end();
            match line.strip_suffix('\\') {
                Some(part) => pending.push_str(part),
                None => {
                    pending.push_str(line);
                    let command = pending.split_whitespace().collect::<Vec<_>>().join(" ");
                    if !command.is_empty() {
                        commands.push(command);
                    }
                    pending.clear();
                }
            }
        }
        commands
    }
}

/// `line` up to a `#` that starts a shell comment (outside quotes, at the
/// start or after a space).
fn strip_comment(line: &str) -> &str {
    let (mut single, mut double, mut previous) = (false, false, ' ');
    for (at, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && previous.is_whitespace() => return &line[..at],
            _ => {}
        }
        previous = c;
    }
    line
}

/// How an example is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// A picture, not an example.
    Figure,
    /// Run by bash against a demo server (`shell`).
    Shell,
    /// Starts a server: run with its ports moved (`servers`).
    Server,
    /// A step `.ci/run` takes (`ci`).
    CiStep,
    /// What a command prints or logs, compared with what it really does
    /// (`outputs`).
    Output,
    /// A body to upload, written to the file the prose names (`shell`).
    UploadFile,
    /// Sent to the server, or compared with what it sends (`payloads`).
    Payload,
    /// A signature check, run over real signatures (`toolchains`).
    Verifier,
    /// Prometheus configuration or alert rules: `promtool` reads them
    /// (`toolchains`), and `metrics.rs` finds the series they name.
    Prometheus,
    /// The GraphQL codegen configuration: `codegen_docs` finds it equal,
    /// but for the project's paths, to `web/codegen.ts`, which `npm run
    /// check` runs.
    CodegenConfig,
}

/// The commands CI runs, not a test: the first command of such a block
/// starts with one of these.
const CI_COMMANDS: [&str; 5] = [
    "cargo test",
    ".ci/run",
    "(cd web &&",
    "container/build",
    "npx openapi-typescript",
];

/// How `block` is checked, or `None` when no rule claims it.
pub fn check_of(block: &Block) -> Option<Check> {
    let first = block.commands().into_iter().next().unwrap_or_default();
    Some(match block.kind.as_str() {
        "text" => Check::Figure,
        "output" => Check::Output,
        "sh" if CI_COMMANDS.iter().any(|c| first.starts_with(c)) => Check::CiStep,
        "sh" if first.contains("cargo run") || first.contains("vitrina serve") => Check::Server,
        "sh" if first.starts_with("createdb") => Check::Server,
        "sh" => Check::Shell,
        "json" if upload_file(block).is_some() => Check::UploadFile,
        "json" | "graphql" | "http" => Check::Payload,
        "yaml" if block.text.contains("vitrina") => Check::Prometheus,
        "python" | "js" | "go" => Check::Verifier,
        "ts" if block.text.contains("CodegenConfig") => Check::CodegenConfig,
        _ => return None,
    })
}

/// The file a JSON block is to be saved as: the prose before it ends
/// "Save it as `NAME`:".
pub fn upload_file(block: &Block) -> Option<String> {
    let (_, rest) = block.before.rsplit_once("Save it as `")?;
    let (name, after) = rest.split_once('`')?;
    (after.trim() == ":").then(|| name.to_owned())
}

/// The Markdown files a reader is pointed to: the README and `docs/`.
fn documents() -> Vec<String> {
    let mut files = vec!["README.md".to_owned()];
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut folders = vec![root.join("docs")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("docs/") {
            let path = entry.expect("a docs/ entry").path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                let relative = path.strip_prefix(root).expect("under the repository");
                files.push(relative.to_string_lossy().into_owned());
            }
        }
    }
    files.sort();
    files
}

/// Every fenced block of the README and `docs/`, in file and line order.
pub fn blocks() -> Vec<Block> {
    documents()
        .iter()
        .flat_map(|file| blocks_of(file, &repository_file(file)))
        .collect()
}

/// Whether line `at` opens an indented code block: four spaces after a
/// blank line that follows a paragraph (not a list, whose indented lines
/// continue it).
fn opens_indented_block(lines: &[&str], at: usize) -> bool {
    let paragraph = lines[..at].iter().rev().find(|l| !l.trim().is_empty());
    let in_list = |l: &&&str| {
        let l = l.trim_start();
        l.starts_with("- ")
            || l.starts_with("* ")
            || l.split_once(". ")
                .is_some_and(|(n, _)| n.parse::<u32>().is_ok())
    };
    lines[at].starts_with("    ")
        && at > 0
        && lines[at - 1].trim().is_empty()
        && paragraph.is_some_and(|p| !p.starts_with(' ') && !in_list(&p))
}

/// The code blocks of `text`, the file `file`: fenced ones, and indented
/// ones, which the docs use for output (kind `output`).
fn blocks_of(file: &str, text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let (mut blocks, mut at, mut prose_from) = (Vec::new(), 0, 0);
    while at < lines.len() {
        if opens_indented_block(&lines, at) {
            let end = (at..lines.len())
                .find(|&i| !lines[i].starts_with("    ") && !lines[i].trim().is_empty())
                .unwrap_or(lines.len());
            let body: Vec<&str> = lines[at..end]
                .iter()
                .map(|l| l.get(4..).unwrap_or(""))
                .collect();
            blocks.push(Block {
                at: format!("{file}:{}", at + 1),
                kind: "output".to_owned(),
                text: body.join("\n").trim_end().to_owned(),
                before: lines[prose_from..at].join("\n"),
            });
            (prose_from, at) = (end, end);
            continue;
        }
        let trimmed = lines[at].trim_start();
        let Some(kind) = trimmed.strip_prefix("```") else {
            at += 1;
            continue;
        };
        let indent = lines[at].len() - trimmed.len();
        let end = (at + 1..lines.len())
            .find(|&i| lines[i].trim() == "```")
            .unwrap_or_else(|| panic!("{file}:{}: a fence that is never closed", at + 1));
        let body: Vec<&str> = lines[at + 1..end]
            .iter()
            .map(|l| {
                l.get(indent..)
                    .filter(|_| l.len() > indent)
                    .unwrap_or(l.trim_start())
            })
            .collect();
        blocks.push(Block {
            at: format!("{file}:{}", at + 1),
            kind: kind.trim().to_owned(),
            text: body.join("\n"),
            before: lines[prose_from..at].join("\n"),
        });
        prose_from = end + 1;
        at = end + 1;
    }
    blocks
}

/// The blocks `check` claims; at least one, so a rule that stops matching
/// fails instead of checking nothing.
pub fn blocks_checked_by(check: Check) -> Vec<Block> {
    let claimed: Vec<Block> = blocks()
        .into_iter()
        .filter(|b| check_of(b) == Some(check))
        .collect();
    assert!(!claimed.is_empty(), "no example is checked by {check:?}");
    claimed
}

#[test]
fn every_example_is_checked() {
    let blocks = blocks();
    assert!(
        blocks.len() > 50,
        "{} blocks: the search lost some",
        blocks.len()
    );
    let unclaimed: Vec<String> = blocks
        .iter()
        .filter(|b| check_of(b).is_none())
        .map(|b| format!("{} [{}]", b.at, b.kind))
        .collect();
    assert!(
        unclaimed.is_empty(),
        "examples no test or CI step runs (add a check to tests/it/doc_examples): {unclaimed:?}"
    );
    let figures = blocks.iter().filter(|b| check_of(b) == Some(Check::Figure));
    for figure in figures {
        assert!(
            !figure.text.contains("curl") && !figure.text.contains("vitrina "),
            "{}: a command in a figure is never run",
            figure.at
        );
    }
}

#[test]
fn blocks_are_found_with_their_prose_and_commands() {
    let text = "Intro.\n\nSave it as `a.json`:\n\n```json\n{}\n```\n\n  ```sh\n  curl -s x \\\n    -d 'a # b' # note\n  # only a comment\n  ```\n\nIt says:\n\n    error: no\n\n- a list\n\n    continued\n";
    let found = blocks_of("f.md", text);
    assert_eq!(found.len(), 3, "{found:?}");
    assert_eq!(
        (found[2].kind.as_str(), found[2].text.as_str()),
        ("output", "error: no")
    );
    assert_eq!(found[2].before, "\nIt says:\n");
    assert_eq!(
        (found[0].at.as_str(), found[0].kind.as_str()),
        ("f.md:5", "json")
    );
    assert_eq!(upload_file(&found[0]).as_deref(), Some("a.json"));
    assert_eq!(found[1].commands(), ["curl -s x -d 'a # b'"]);
    assert_eq!(found[1].before, "");
}

/// The series the Prometheus examples name, each with the labels their
/// selectors use.
pub fn prometheus_series() -> Vec<(String, Vec<String>)> {
    let mut series = Vec::new();
    for block in blocks_checked_by(Check::Prometheus) {
        let text = &block.text;
        for (at, _) in text.match_indices("vitrina_") {
            let name: String = text[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let rest = &text[at + name.len()..];
            let labels = match rest.strip_prefix('{') {
                Some(selector) => selector[..selector.find('}').unwrap_or_default()]
                    .split(',')
                    .filter_map(|m| m.split(['=', '!']).next())
                    .map(|l| l.trim().to_owned())
                    .filter(|l| !l.is_empty())
                    .collect(),
                None => Vec::new(),
            };
            series.push((name, labels));
        }
    }
    assert!(!series.is_empty(), "the alert rules name no series");
    series
}

#[test]
fn prometheus_series_are_read_with_their_labels() {
    let series = prometheus_series();
    let processing = series
        .iter()
        .find(|(name, _)| name == "vitrina_merge_backlog_submissions")
        .expect("the backlog");
    assert_eq!(processing.1, ["status"]);
}
