//! Puts GraphiQL's browser packages into the binary. `npm ci` installs the
//! exact versions of `web/package-lock.json` (npm checks each tarball
//! against the lockfile's integrity hash) into OUT_DIR; this script then
//! writes `web_assets.rs`, which embeds the files the playground loads, and
//! `LICENSES.txt`, the licence of every package those files are built from.
//! Nothing fetched is kept in the repository.

use std::fmt::Write as _;
use std::io;
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

/// What went wrong, in a sentence: cargo prints it and fails the build.
type Failure = Box<dyn std::error::Error>;

fn main() -> Result<(), Failure> {
    println!("cargo:rerun-if-changed=web/package.json");
    println!("cargo:rerun-if-changed=web/package-lock.json");
    let out = PathBuf::from(env::var_os("OUT_DIR").ok_or("cargo did not set OUT_DIR")?);
    let web = out.join("web");
    install(&web)?;
    let modules = web.join("node_modules");

    let mut table = String::from("&[\n");
    for (package, file, content_type) in ASSETS {
        let path = modules.join(package).join(file);
        if !path.is_file() {
            return Err(format!("{} is not in the installed package", path.display()).into());
        }
        writeln!(
            table,
            "    Asset {{ package: {package:?}, version: {version:?}, file: {file:?}, \
             content_type: {content_type:?}, body: include_bytes!({path:?}) }},",
            version = version(&modules.join(package))?,
        )?;
    }
    table.push(']');
    write(&out.join("web_assets.rs"), &table)?;

    let mut licences = String::from(
        "The GraphiQL playground served by Vitrina is built from these npm packages.\n",
    );
    for package in packages(&modules) {
        licences.push_str(&licence(&package)?);
    }
    write(&out.join("LICENSES.txt"), &licences)
}

/// `npm ci` of the runtime packages only, skipped when the lockfile has not
/// changed since the last install.
fn install(web: &Path) -> Result<(), Failure> {
    let lock = fs::read("web/package-lock.json")
        .map_err(|e| context("reading web/package-lock.json", e))?;
    let stamp = web.join("installed-lock.json");
    if fs::read(&stamp).is_ok_and(|done| done == lock) {
        return Ok(());
    }
    fs::create_dir_all(web).map_err(|e| context("creating OUT_DIR/web", e))?;
    for file in ["package.json", "package-lock.json"] {
        fs::copy(Path::new("web").join(file), web.join(file))
            .map_err(|e| context(&format!("copying web/{file}"), e))?;
    }
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
        .map_err(|e| {
            format!(
                "building Vitrina runs `npm ci` to fetch GraphiQL's pinned packages, \
                 and npm could not be started ({e}): install Node.js 20 or newer with npm"
            )
        })?;
    if !status.success() {
        return Err(format!("`npm ci` in {} failed: {status}", web.display()).into());
    }
    fs::write(&stamp, lock).map_err(|e| context("writing the install stamp", e))
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
fn licence(package: &Path) -> Result<String, Failure> {
    let manifest = manifest(package)?;
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
    Ok(section)
}

fn version(package: &Path) -> Result<String, Failure> {
    let manifest = manifest(package)?;
    let version = manifest["version"].as_str();
    let version = version.ok_or_else(|| format!("{} has no version", package.display()))?;
    Ok(version.to_owned())
}

fn manifest(package: &Path) -> Result<serde_json::Value, Failure> {
    let path = package.join("package.json");
    let text = fs::read_to_string(&path).map_err(|e| context(&path.display().to_string(), e))?;
    Ok(serde_json::from_str(&text)?)
}

fn write(path: &Path, text: &str) -> Result<(), Failure> {
    fs::write(path, text).map_err(|e| context(&format!("writing {}", path.display()), e))
}

fn context(doing: &str, e: io::Error) -> Failure {
    format!("{doing}: {e}").into()
}
