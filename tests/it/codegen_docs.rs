//! `docs/graphql-codegen.md` shows the configuration the browser code is
//! generated with (`web/codegen.ts`, which `npm run check` runs) but for
//! the project's paths, and it maps every custom scalar the schema has.

use std::collections::BTreeSet;

use crate::helpers::repository_file;

/// The lines of the `scalars: { ... }` block of `text`, trimmed.
fn scalar_map(text: &str, from: &str) -> Vec<String> {
    let start = text
        .find("scalars: {")
        .unwrap_or_else(|| panic!("{from} has no scalars block"));
    let block = &text[start + "scalars: {".len()..];
    let end = block.find('}').expect("the block's end");
    block[..end]
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_codegen_page_maps_every_custom_scalar_as_web_codegen_does() {
    let documented = scalar_map(
        &repository_file("docs/graphql-codegen.md"),
        "docs/graphql-codegen.md",
    );
    let used = scalar_map(&repository_file("web/codegen.ts"), "web/codegen.ts");
    assert_eq!(documented, used);

    let mapped: BTreeSet<&str> = documented
        .iter()
        .map(|line| line.split(':').next().unwrap_or_default())
        .collect();
    let sdl = vitrina::graphql::sdl();
    let declared: BTreeSet<&str> = sdl
        .lines()
        .filter_map(|line| line.strip_prefix("scalar "))
        .map(str::trim)
        .collect();
    assert_eq!(mapped, declared);
}

/// The lines of a codegen configuration from its `import`, comments
/// dropped and the project's paths (schema, documents, output) blanked.
fn configuration(text: &str) -> Vec<String> {
    let start = text
        .find("import type")
        .expect("the configuration's import");
    let end = text[start..]
        .find("export default config;")
        .expect("its end")
        + start;
    text[start..end]
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .map(|l| match l.split_once(':') {
            Some(("schema" | "documents", _)) => l.split(':').next().unwrap_or(l).to_owned(),
            _ if l.ends_with("/\": {") => "OUTPUT: {".to_owned(),
            _ => l.to_owned(),
        })
        .collect()
}

#[test]
fn the_codegen_page_shows_the_configuration_web_runs_but_for_the_paths() {
    let page = repository_file("docs/graphql-codegen.md");
    let documented = &page[page.find("```ts").expect("the example")..];
    let documented = &documented[..documented[3..].find("```").expect("its end") + 3];
    let used = repository_file("web/codegen.ts");
    assert_eq!(configuration(documented), configuration(&used));
    assert!(configuration(&used).len() > 10);
}
