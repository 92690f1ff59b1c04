//! Puts the browser packages of GraphiQL and of the API reference (`GET
//! /docs`) into the binary when npm can fetch them.
//!
//! `web/graphiql/pinned-assets.json` names each file a page loads with the
//! page, its package version and Subresource Integrity hash; `npm run pin` in `web/`
//! writes it from the files npm installs, so no hash is typed by hand. This
//! script checks the manifest's versions against `web/package-lock.json`,
//! then runs `npm ci`, which installs the lockfile's exact versions (npm
//! checks each tarball against the lockfile's integrity hash) into OUT_DIR.
//! Each file must match its manifest hash; `web_assets.rs` then embeds it,
//! and `LICENSES.txt` holds the licence of every package they are built from.
//!
//! When npm is missing or `npm ci` fails, the build still succeeds, with one
//! warning: the binary carries the manifest alone and the page loads the
//! same files from a CDN, pinned by the same hashes. Nothing fetched is kept
//! in the repository.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::{env, fs};

use base64::Engine as _;
use sha2::{Digest, Sha384};

const MANIFEST: &str = "web/graphiql/pinned-assets.json";
const LOCKFILE: &str = "web/package-lock.json";

/// What went wrong, in a sentence: cargo prints it and fails the build.
type Failure = Box<dyn std::error::Error>;

/// One file of the manifest.
struct Pinned {
    /// The `assets::Page` variant of the page that loads it.
    page: &'static str,
    package: String,
    version: String,
    file: String,
    content_type: String,
    license: String,
    integrity: String,
}

fn main() -> Result<(), Failure> {
    for input in ["web/package.json", LOCKFILE, MANIFEST] {
        println!("cargo:rerun-if-changed={input}");
    }
    let out = PathBuf::from(env::var_os("OUT_DIR").ok_or("cargo did not set OUT_DIR")?);
    let pinned = pinned()?;
    let web = out.join("web");
    let (bodies, licences) = match install(&web) {
        Ok(()) => {
            let modules = web.join("node_modules");
            (embedded(&pinned, &modules)?, licences(&modules)?)
        }
        Err(why) => {
            println!(
                "cargo:warning=The browser packages of GraphiQL and the API reference are not \
                 built into this binary ({why}): their pages will load them from a CDN at the \
                 pinned versions and hashes. \
                 Install Node.js 20+ with npm and rebuild (after `cargo clean -p vitrina`) \
                 to serve them offline."
            );
            (format!("BuiltIn::Missing({why:?})"), cdn_licences(&pinned))
        }
    };
    let mut code = String::from("pub static ASSETS: &[Asset] = &[\n");
    for p in &pinned {
        writeln!(
            code,
            "    Asset {{ page: Page::{}, package: {:?}, version: {:?}, file: {:?}, \
             content_type: {:?}, integrity: {:?} }},",
            p.page, p.package, p.version, p.file, p.content_type, p.integrity
        )?;
    }
    code.push_str("];\n");
    writeln!(code, "pub static BUILT_IN: BuiltIn = {bodies};")?;
    write(&out.join("web_assets.rs"), &code)?;
    write(&out.join("LICENSES.txt"), &licences)
}

/// The manifest's files, each at the version the lockfile pins.
fn pinned() -> Result<Vec<Pinned>, Failure> {
    let manifest = json(Path::new(MANIFEST))?;
    let lock = json(Path::new(LOCKFILE))?;
    let entries = manifest["assets"]
        .as_array()
        .ok_or_else(|| format!("{MANIFEST} has no \"assets\" list"))?;
    let mut pinned = Vec::new();
    for entry in entries {
        let field = |key: &str| {
            entry[key]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("an entry of {MANIFEST} has no {key:?}"))
        };
        let page = match field("page")?.as_str() {
            "graphiql" => "Graphiql",
            "docs" => "ApiReference",
            other => return Err(format!("{MANIFEST} names an unknown page {other:?}").into()),
        };
        let p = Pinned {
            page,
            package: field("package")?,
            version: field("version")?,
            file: field("file")?,
            content_type: field("contentType")?,
            license: field("license")?,
            integrity: field("integrity")?,
        };
        let locked = &lock["packages"][format!("node_modules/{}", p.package)]["version"];
        if locked.as_str() != Some(p.version.as_str()) {
            return Err(format!(
                "{MANIFEST} pins {}@{} but {LOCKFILE} has {locked}: \
                 run `npm ci && npm run pin` in web/",
                p.package, p.version
            )
            .into());
        }
        pinned.push(p);
    }
    Ok(pinned)
}

/// `npm ci` of the runtime packages only, skipped when the lockfile has not
/// changed since the last install. The error says, in a few words, why
/// there is no install.
fn install(web: &Path) -> Result<(), String> {
    let lock = fs::read(LOCKFILE).map_err(|e| format!("reading {LOCKFILE}: {e}"))?;
    let stamp = web.join("installed-lock.json");
    if fs::read(&stamp).is_ok_and(|done| done == lock) {
        return Ok(());
    }
    fs::create_dir_all(web).map_err(|e| format!("creating OUT_DIR/web: {e}"))?;
    for file in ["package.json", "package-lock.json"] {
        fs::copy(Path::new("web").join(file), web.join(file))
            .map_err(|e| format!("copying web/{file}: {e}"))?;
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
        .map_err(|e| format!("npm could not be started: {e}"))?;
    if !status.success() {
        return Err(format!("`npm ci` failed: {status}"));
    }
    fs::write(&stamp, lock).map_err(|e| format!("writing the install stamp: {e}"))
}

/// `BuiltIn::Files` with each installed file, once its bytes match the
/// manifest's hash.
fn embedded(pinned: &[Pinned], modules: &Path) -> Result<String, Failure> {
    let mut code = String::from("BuiltIn::Files(&[\n");
    for p in pinned {
        let path = modules.join(&p.package).join(&p.file);
        let body = fs::read(&path).map_err(|e| context(&path.display().to_string(), e))?;
        let integrity = format!(
            "sha384-{}",
            base64::engine::general_purpose::STANDARD.encode(Sha384::digest(&body))
        );
        if integrity != p.integrity {
            return Err(format!(
                "{} is not the file {MANIFEST} pins ({integrity}, not {}): \
                 run `npm ci && npm run pin` in web/",
                path.display(),
                p.integrity
            )
            .into());
        }
        writeln!(code, "    include_bytes!({path:?}),")?;
    }
    code.push_str("])");
    Ok(code)
}

/// Every installed package's section of LICENSES.txt.
fn licences(modules: &Path) -> Result<String, Failure> {
    let mut text = String::from(
        "GraphiQL and the API reference served by Vitrina are built from these npm packages.\n",
    );
    for package in packages(modules) {
        text.push_str(&licence(&package)?);
    }
    Ok(text)
}

/// LICENSES.txt of a binary without the packages: it distributes none of
/// them, and names the ones the page loads from the CDN.
fn cdn_licences(pinned: &[Pinned]) -> String {
    let mut text = String::from(
        "This Vitrina was built without the browser packages of GraphiQL and the API \
         reference: the pages load these files from a CDN, each package with its licence.\n\n",
    );
    for p in pinned {
        text.push_str(&format!(
            "{}@{}/{} ({})\n",
            p.package, p.version, p.file, p.license
        ));
    }
    text
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
    let manifest = json(&package.join("package.json"))?;
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

fn json(path: &Path) -> Result<serde_json::Value, Failure> {
    let text = fs::read_to_string(path).map_err(|e| context(&path.display().to_string(), e))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()).into())
}

fn write(path: &Path, text: &str) -> Result<(), Failure> {
    fs::write(path, text).map_err(|e| context(&format!("writing {}", path.display()), e))
}

fn context(doing: &str, e: io::Error) -> Failure {
    format!("{doing}: {e}").into()
}
