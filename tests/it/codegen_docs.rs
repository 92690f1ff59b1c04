//! `docs/graphql-codegen.md` maps the custom scalars exactly as the
//! configuration the browser code is generated with (`web/codegen.ts`), and
//! maps every custom scalar the schema has.

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
