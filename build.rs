//! Puts GraphiQL's browser packages into the binary. `npm ci` installs the
//! exact versions of `web/package-lock.json` (npm checks each tarball
//! against the lockfile's integrity hash) into OUT_DIR; this script then
//! writes `web_assets.rs`, which embeds the files the playground loads, and
//! `LICENSES.txt`, the licence of every package those files are built from.
//! Nothing fetched is kept in the repository.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::{env, fs};

/// The files GraphiQL loads, in the order the page loads them:
/// (package, file within the package, content type).
const ASSETS: &[(&str, &str, &str)] = &[
    ("react", "umd/react.production.min.js", "text/javascript"),
    (
        "react-dom",
        "umd/react-dom.production.min.js",
        "text/javascript",
    ),
    ("graphiql", "graphiql.min.js", "text/javascript"),
    (
        "@graphiql/plugin-explorer",
        "dist/index.umd.js",
        "text/javascript",
    ),
    ("graphiql", "graphiql.min.css", "text/css"),
    ("@graphiql/plugin-explorer", "dist/style.css", "text/css"),
];

fn main() {
    println!("cargo:rerun-if-changed=web/package.json");
    println!("cargo:rerun-if-changed=web/package-lock.json");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let web = out.join("web");
    install(&web);
    let modules = web.join("node_modules");

    let mut table = String::from("&[\n");
    for (package, file, content_type) in ASSETS {
        let path = modules.join(package).join(file);
        assert!(
            path.is_file(),
            "{} is not in the installed package",
            path.display()
        );
        writeln!(
            table,
            "    Asset {{ package: {package:?}, version: {version:?}, file: {file:?}, \
             content_type: {content_type:?}, body: include_bytes!({path:?}) }},",
            version = version(&modules.join(package)),
        )
        .expect("writing to a String");
    }
    table.push(']');
    write(&out.join("web_assets.rs"), &table);

    let mut licences = String::from(
        "The GraphiQL playground served by Vitrina is built from these npm packages.\n",
    );
    for package in packages(&modules) {
        licences.push_str(&licence(&package));
    }
    write(&out.join("LICENSES.txt"), &licences);
}

/// `npm ci` of the runtime packages only, skipped when the lockfile has not
/// changed since the last install.
fn install(web: &Path) {
    let lock = fs::read("web/package-lock.json").expect("web/package-lock.json");
    let stamp = web.join("installed-lock.json");
    if fs::read(&stamp).is_ok_and(|done| done == lock) {
        return;
    }
    fs::create_dir_all(web).expect("creating OUT_DIR/web");
    fs::copy("web/package.json", web.join("package.json")).expect("copying package.json");
    fs::copy("web/package-lock.json", web.join("package-lock.json"))
        .expect("copying package-lock.json");
    let status = Command::new("npm")
        .args([
            "ci",
            "--omit=dev",
            "--ignore-scripts",
            "--no-audit",
            "--no-fund",
        ])
        .current_dir(web)
        .status()
        .unwrap_or_else(|e| {
            panic!(
                "building Vitrina runs `npm ci` to fetch GraphiQL's pinned packages, \
                 and npm could not be started ({e}): install Node.js 20 or newer with npm"
            )
        });
    assert!(
        status.success(),
        "`npm ci` in {} failed: {status}",
        web.display()
    );
    fs::write(&stamp, lock).expect("writing the install stamp");
}

/// Every installed package folder, nested ones included, in a stable order.
fn packages(modules: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = fs::read_dir(modules) else {
        return found;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| Some(e.ok()?.path())).collect();
    entries.sort();
    for entry in entries {
        let name = entry
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name.starts_with('@') {
            found.extend(packages(&entry));
        } else if entry.join("package.json").is_file() {
            found.push(entry.clone());
            found.extend(packages(&entry.join("node_modules")));
        }
    }
    found
}

/// One package's section of LICENSES.txt: name, version, declared licence
/// and the text of its licence file when it ships one.
fn licence(package: &Path) -> String {
    let manifest = manifest(package);
    let field = |key: &str| manifest[key].as_str().unwrap_or("unknown").to_owned();
    let mut section = format!(
        "\n==== {}@{} ({})\n",
        field("name"),
        field("version"),
        field("license")
    );
    let file = fs::read_dir(package)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.to_ascii_uppercase().starts_with("LICEN"))
        });
    if let Some(text) = file.and_then(|f| fs::read_to_string(f).ok()) {
        section.push_str(text.trim_end());
        section.push('\n');
    }
    section
}

fn version(package: &Path) -> String {
    manifest(package)["version"]
        .as_str()
        .expect("a package.json has a version")
        .to_owned()
}

fn manifest(package: &Path) -> serde_json::Value {
    let text = fs::read_to_string(package.join("package.json")).expect("package.json");
    serde_json::from_str(&text).expect("package.json is JSON")
}

fn write(path: &Path, text: &str) {
    fs::write(path, text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}
