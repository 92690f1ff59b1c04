//! The crate's top-level modules are layers: no module reaches, through its
//! `crate::` paths, a module that reaches back to it. In a circle each module
//! would depend on all the others, and none could be read or changed alone.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Each top-level module and the top-level modules it names.
type Graph = BTreeMap<String, BTreeSet<String>>;

#[test]
fn the_top_level_modules_import_each_other_without_a_cycle() {
    let graph = module_graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(graph["server"].contains("http"), "misread: {graph:?}");
    if let Some(cycle) = find_cycle(&graph) {
        panic!("top-level modules in a cycle: {}", cycle.join(" -> "));
    }
}

#[test]
fn paths_are_read_single_grouped_and_over_lines() {
    let text = "use crate::{a, b::{c, d}};\nuse crate::{\n    e::f,\n    g,\n};\ncrate::h::i(); my_crate::j";
    let names: Vec<String> = referenced(text).into_iter().collect();
    assert_eq!(names, ["a", "b", "e", "g", "h"]);
}

#[test]
fn a_cycle_is_found_and_named() {
    let circle = graph(&[("a", "b"), ("b", "c"), ("c", "b")]);
    assert_eq!(find_cycle(&circle).unwrap(), ["b", "c", "b"]);
    let layers = graph(&[("a", "b"), ("b", "c"), ("a", "c")]);
    assert_eq!(find_cycle(&layers), None);
}

fn graph(edges: &[(&str, &str)]) -> Graph {
    let mut graph = Graph::new();
    for (from, to) in edges {
        graph
            .entry(from.to_string())
            .or_default()
            .insert(to.to_string());
    }
    graph
}

fn module_graph(src: &Path) -> Graph {
    let modules: BTreeSet<String> = fs::read_dir(src)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter_map(|path| match path.extension() {
            Some(ext) if ext == "rs" => Some(path.file_stem()?.to_str()?.to_owned()),
            Some(_) => None,
            None => Some(path.file_name()?.to_str()?.to_owned()),
        })
        .filter(|name| name != "lib" && name != "main")
        .collect();
    let mut graph = Graph::new();
    for file in rust_files(src) {
        let relative = file.strip_prefix(src).unwrap().with_extension("");
        let module = relative.iter().next().unwrap().to_str().unwrap().to_owned();
        if !modules.contains(&module) {
            continue;
        }
        let names = referenced(&fs::read_to_string(&file).unwrap());
        let uses = names
            .into_iter()
            .filter(|n| *n != module && modules.contains(n));
        graph.entry(module.clone()).or_default().extend(uses);
    }
    graph
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
    files
}

/// The first name after each `crate::` in `text`; of a group
/// (`crate::{a, b::c}`), the first name of each of its paths.
fn referenced(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (at, _) in text.match_indices("crate::") {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // `my_crate::`, not ours
        }
        let path = &text[at + "crate::".len()..];
        match path.strip_prefix('{') {
            Some(group) => names.extend(group_heads(group)),
            None => {
                names.insert(first_name(path));
            }
        }
    }
    names
}

/// The first name of each path of a group, given the text after its `{`.
fn group_heads(group: &str) -> Vec<String> {
    let (mut heads, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth > 0 => depth -= 1,
            ',' | '}' if depth == 0 => {
                let head = first_name(&group[start..i]);
                // A trailing comma leaves an empty path.
                if !head.is_empty() {
                    heads.push(head);
                }
                if c == '}' {
                    break;
                }
                start = i + 1;
            }
            _ => {}
        }
    }
    heads
}

fn first_name(path: &str) -> String {
    let path = path.trim_start();
    let end = path
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(path.len());
    path[..end].to_owned()
}

/// Modules that lead back to the first of them, if the graph has a cycle.
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    fn visit<'g>(
        graph: &'g Graph,
        module: &'g str,
        path: &mut Vec<&'g str>,
        done: &mut BTreeSet<&'g str>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|m| *m == module) {
            let cycle = path[at..].iter().chain([&module]);
            return Some(cycle.map(|m| m.to_string()).collect());
        }
        if done.contains(module) {
            return None;
        }
        path.push(module);
        for next in graph.get(module).into_iter().flatten() {
            if let Some(cycle) = visit(graph, next, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(module);
        None
    }
    let (mut path, mut done) = (Vec::new(), BTreeSet::new());
    graph
        .keys()
        .find_map(|module| visit(graph, module, &mut path, &mut done))
}
