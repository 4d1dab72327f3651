//! ARCHITECTURE.md is the maintainers' map: it names every folder of the three crates, so
//! a folder added without a word there fails here.

use std::path::Path;

/// Every folder under `root`, as a path relative to it with a trailing `/`.
fn folders(root: &Path, under: &Path, out: &mut Vec<String>) {
    let mut entries: Vec<_> = std::fs::read_dir(under)
        .unwrap_or_else(|e| panic!("{}: {e}", under.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .collect();
    entries.sort();
    for path in entries {
        let relative = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        out.push(format!("{relative}/"));
        folders(root, &path, out);
    }
}

#[test]
fn architecture_md_names_every_folder_of_the_three_crates() {
    let repository = Path::new(env!("CARGO_MANIFEST_DIR"));
    let map = std::fs::read_to_string(repository.join("ARCHITECTURE.md")).unwrap();
    let mut unnamed = Vec::new();
    let mut seen = 0;
    for crate_src in ["src", "server/src", "cli/src"] {
        let root = repository.join(crate_src);
        let mut found = Vec::new();
        folders(&root, &root, &mut found);
        seen += found.len();
        unnamed.extend(
            found
                .into_iter()
                .filter(|folder| !map.contains(folder.as_str()))
                .map(|folder| format!("{crate_src}/{folder}")),
        );
    }
    assert!(
        seen >= 20,
        "only {seen} folders found: is this the repository?"
    );
    assert!(
        unnamed.is_empty(),
        "ARCHITECTURE.md does not name these folders (as `path/` relative to their \
         crate's src): {unnamed:?}"
    );
    let readme = std::fs::read_to_string(repository.join("README.md")).unwrap();
    let top: String = readme.lines().take(8).collect::<Vec<_>>().join("\n");
    assert!(
        top.contains("ARCHITECTURE.md"),
        "the README's top links the map"
    );
}
