//! The configuration reference, `docs/settings.md`, written from the
//! command line's own definitions: every setting of `serve`, by section,
//! with its environment variable, flag, default and help text. A test
//! compares the checked-in file with this, so the two cannot drift.

use clap::{Arg, CommandFactory};

use super::Cli;

/// The sections of `serve --help`, in the reference's order.
pub const SECTIONS: [&str; 6] = [
    "Server",
    "Database",
    "Limits",
    "Jobs",
    "Webhooks",
    "Playground",
];

/// The reference as Markdown.
pub fn settings_reference() -> String {
    let mut cli = Cli::command();
    cli.build();
    let serve = cli
        .get_subcommands()
        .find(|command| command.get_name() == "serve")
        .cloned()
        .unwrap_or_default();
    let settings: Vec<&Arg> = serve
        .get_arguments()
        .filter(|arg| arg.get_long().is_some() && !is_builtin(arg))
        .collect();
    let mut text = String::from(
        "# Settings\n\n\
         Every setting of `vitrina serve`, by the section `vitrina serve --help` shows it in.\n\
         Each is a flag with an environment override; the flag wins when both are set.\n\
         This file is generated from the command line's definitions: after changing a\n\
         setting, run `cargo run -- settings --out docs/settings.md` (a test fails until then).\n",
    );
    for section in SECTIONS {
        text.push_str(&format!(
            "\n## {section}\n\n| variable | flag | default | meaning |\n|---|---|---|---|\n"
        ));
        for arg in settings.iter().filter(|arg| heading(arg) == section) {
            text.push_str(&row(arg));
        }
    }
    text
}

/// The section `arg` is listed under (`Options` for one with none).
pub fn heading(arg: &Arg) -> &str {
    arg.get_help_heading().unwrap_or("Options")
}

/// clap's own `--help` and `--version`.
fn is_builtin(arg: &Arg) -> bool {
    matches!(arg.get_id().as_str(), "help" | "version")
}

/// One table row. A default a help text states itself (`[default: ...]`,
/// for one that depends on the database or another setting) is moved to
/// its column.
fn row(arg: &Arg) -> String {
    let help = arg
        .get_long_help()
        .or(arg.get_help())
        .map(|help| one_line(&help.to_string()))
        .unwrap_or_default();
    let (meaning, stated) = match help.split_once(" [default: ") {
        Some((before, rest)) => match rest.split_once(']') {
            Some((default, after)) => (format!("{before}{after}"), Some(default.to_owned())),
            None => (help.clone(), None),
        },
        None => (help.clone(), None),
    };
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|value| format!("`{}`", value.to_string_lossy()))
        .collect();
    let default = match (stated, defaults.is_empty()) {
        (Some(stated), _) => stated,
        (None, false) => defaults.join(", "),
        (None, true) => "unset".to_owned(),
    };
    let variable = arg
        .get_env()
        .map(|env| format!("`{}`", env.to_string_lossy()))
        .unwrap_or_default();
    let flag = arg.get_long().unwrap_or_default();
    format!(
        "| {variable} | `--{flag}` | {} | {} |\n",
        cell(&default),
        cell(&meaning)
    )
}

/// Help text over several lines as one line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` in a table cell: a `|` would end the cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_of_serve_is_in_a_section_of_the_reference() {
        let mut cli = Cli::command();
        cli.build();
        let serve = cli
            .get_subcommands()
            .find(|command| command.get_name() == "serve")
            .expect("serve")
            .clone();
        let outside: Vec<String> = serve
            .get_arguments()
            .filter(|arg| !is_builtin(arg) && !SECTIONS.contains(&heading(arg)))
            .map(|arg| arg.get_id().to_string())
            .collect();
        assert!(outside.is_empty(), "in no section: {outside:?}");
        let reference = settings_reference();
        for arg in serve.get_arguments().filter(|arg| !is_builtin(arg)) {
            let flag = format!("`--{}`", arg.get_long().unwrap_or_default());
            assert!(reference.contains(&flag), "{flag} missing");
        }
    }

    #[test]
    fn a_default_the_help_states_moves_to_its_column() {
        let arg = Arg::new("x")
            .long("x")
            .help("Most of them [default: 16 on PostgreSQL]. More | less.");
        assert_eq!(
            row(&arg),
            "|  | `--x` | 16 on PostgreSQL | Most of them. More \\| less. |\n"
        );
    }
}
