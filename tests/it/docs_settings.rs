//! The settings the docs name are the ones the binary has, with the
//! defaults it has: `docs/settings.md` is generated from the command line
//! (and a test in `cli.rs` keeps it so); every other page states settings
//! by hand, which these tests hold to it.

use std::collections::BTreeMap;

use crate::helpers::repository_file;

/// Variables the docs may name that are not `serve` settings: read from
/// the environment alone, by the logger and by the tests.
const OTHER_VARIABLES: [&str; 2] = ["VITRINA_LOG_FORMAT", "VITRINA_TEST_PYTHON"];

/// Every page a user reads that states settings by hand.
const PAGES: [&str; 9] = [
    "README.md",
    "docs/architecture.md",
    "docs/configuration.md",
    "docs/contributing.md",
    "docs/graphql.md",
    "docs/graphql-codegen.md",
    "docs/operations.md",
    "docs/rest.md",
    "docs/webhooks.md",
];

/// Each setting of the generated reference with its default as written
/// there (`` `600` ``, or words).
fn defaults() -> BTreeMap<String, String> {
    repository_file("docs/settings.md")
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let variable = cells.get(1)?.strip_prefix("`VITRINA_")?.strip_suffix('`')?;
            Some((format!("VITRINA_{variable}"), cells.get(3)?.to_string()))
        })
        .collect()
}

/// The `VITRINA_` names in `text`.
fn variables(text: &str) -> Vec<&str> {
    text.match_indices("VITRINA_")
        .map(|(at, _)| {
            let rest = &text[at..];
            let end = rest
                .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
                .unwrap_or(rest.len());
            rest[..end].trim_end_matches('_')
        })
        .collect()
}

#[test]
fn every_variable_the_docs_name_exists() {
    let known = defaults();
    assert!(known.len() > 50, "{} settings read", known.len());
    for page in PAGES {
        for variable in variables(&repository_file(page)) {
            assert!(
                known.contains_key(variable) || OTHER_VARIABLES.contains(&variable),
                "{page} names {variable}, which is no setting"
            );
        }
    }
}

/// The first number of `text`, thousands separators dropped.
fn first_number(text: &str) -> Option<(u64, &str)> {
    let start = text.find(|c: char| c.is_ascii_digit())?;
    let rest = &text[start..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == ','))
        .unwrap_or(rest.len());
    let number = rest[..end].replace(',', "").parse().ok()?;
    Some((number, rest[end..].trim_start()))
}

#[test]
fn the_limits_table_states_each_settings_default() {
    let known = defaults();
    let page = repository_file("docs/configuration.md");
    let table = &page[page
        .find("## Limits and protections")
        .expect("the limits table")..];
    let mut checked = 0;
    for row in table.lines().filter(|l| l.starts_with("| ")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let (Some(stated), Some(settings)) = (cells.get(2), cells.get(3)) else {
            continue;
        };
        let Some(&setting) = variables(settings).first() else {
            continue;
        };
        // Defaults the reference states in words are the row's business.
        let Some(default) = known[setting]
            .strip_prefix('`')
            .and_then(|d| d.strip_suffix('`'))
            .and_then(|d| d.parse::<u64>().ok())
        else {
            continue;
        };
        let (number, unit) = first_number(stated).unwrap_or_else(|| panic!("{row}"));
        let unit = unit.split(|c: char| !c.is_ascii_alphabetic()).next();
        let in_row = match (setting, unit.unwrap_or("")) {
            (s, "s") if s.ends_with("_MS") => number * 1000,
            (s, "KiB") if s.ends_with("_BYTES") => number * 1024,
            _ => number,
        };
        assert_eq!(in_row, default, "{setting}: the table says {stated:?}");
        checked += 1;
    }
    assert!(checked > 30, "{checked} rows checked");
}
