//! How this binary was installed: by `cargo install` (cargo's own record names it) or copied into place.

use std::path::{Path, PathBuf};

use serde_json::Value;

pub const PACKAGE: &str = "agentic-hil";

/// Where `cargo install` got the package from, as cargo recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Registry,
    Path(PathBuf),
    Git { url: String, selector: Vec<String> },
}

/// A `cargo install` of this package, from cargo's `.crates2.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CargoInstall {
    /// The install root: the directory above the binary's `bin`, holding cargo's record.
    pub root: PathBuf,
    pub source: Source,
    /// The `--version` requirement it was installed with: a pin.
    pub pin: Option<String>,
    pub features: Vec<String>,
    pub no_default_features: bool,
}

impl CargoInstall {
    /// The `cargo install` arguments that reinstall from `source` with the recorded features.
    pub fn install_args(&self, source: &Source) -> Vec<String> {
        let mut args = vec!["install".to_owned(), "--locked".to_owned()];
        match source {
            Source::Registry => {}
            Source::Path(path) => {
                args.push("--path".to_owned());
                args.push(path.display().to_string());
            }
            Source::Git { url, selector } => {
                args.push("--git".to_owned());
                args.push(url.clone());
                args.extend(selector.iter().cloned());
            }
        }
        if !self.features.is_empty() {
            args.push("--features".to_owned());
            args.push(self.features.join(","));
        }
        if self.no_default_features {
            args.push("--no-default-features".to_owned());
        }
        if !matches!(source, Source::Path(_)) {
            args.push(PACKAGE.to_owned());
        }
        args
    }
}

/// The cargo install this binary belongs to: it must sit in `<root>/bin` and `<root>/.crates2.json`
/// must name this package with an `agentic-hil` binary. Anything else counts as a copied binary. The
/// root comes from the binary's own (resolved) path, never from `CARGO_HOME` or `HOME`: those are the
/// server's environment, which the agent's `.mcp.json` can set.
pub fn detect_cargo(exe: &Path) -> Option<CargoInstall> {
    let bin = exe.parent()?;
    if bin.file_name()? != "bin" {
        return None;
    }
    let root = bin.parent()?;
    let text = std::fs::read_to_string(root.join(".crates2.json")).ok()?;
    let mut install = parse_crates2(&text)?;
    install.root = root.to_path_buf();
    Some(install)
}

/// The `cargo` pinned for an upgrade: the one in the install root's `bin`, beside the binary it
/// installed. No other is ever run (PATH would be the agent's choice); without it the upgrade refuses.
pub fn pinned_cargo(root: &Path) -> Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt as _;
    let cargo = root.join("bin").join("cargo");
    match cargo.metadata() {
        Ok(md) if md.is_file() && md.permissions().mode() & 0o111 != 0 => Ok(cargo),
        Ok(_) => Err("the install root's bin/cargo is not an executable file".to_owned()),
        Err(_) => Err("the install root has no bin/cargo beside the installed binary".to_owned()),
    }
}

fn parse_crates2(text: &str) -> Option<CargoInstall> {
    let doc: Value = serde_json::from_str(text).ok()?;
    doc.get("installs")?
        .as_object()?
        .iter()
        .find_map(|(key, entry)| {
            let (name, rest) = key.split_once(' ')?;
            if name != PACKAGE {
                return None;
            }
            let bins = entry.get("bins")?.as_array()?;
            if !bins.iter().any(|b| b.as_str() == Some(PACKAGE)) {
                return None;
            }
            let source = rest
                .split_once('(')
                .and_then(|(_, s)| s.strip_suffix(')'))
                .map_or(Some(Source::Registry), parse_source)?;
            let features = entry
                .get("features")
                .and_then(Value::as_array)
                .map(|f| {
                    f.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            Some(CargoInstall {
                root: PathBuf::new(),
                source,
                pin: entry
                    .get("version_req")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                features,
                no_default_features: entry
                    .get("no_default_features")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            })
        })
}

/// Cargo's source id: `registry+URL`, `sparse+URL`, `path+file:///dir`, `git+URL?branch=x#commit`.
fn parse_source(id: &str) -> Option<Source> {
    let (kind, rest) = id.split_once('+')?;
    match kind {
        "registry" | "sparse" => Some(Source::Registry),
        "path" => rest
            .strip_prefix("file://")
            .map(|p| Source::Path(PathBuf::from(p))),
        "git" => {
            let without_commit = rest.split('#').next().unwrap_or(rest);
            let (url, query) = without_commit
                .split_once('?')
                .map_or((without_commit, None), |(u, q)| (u, Some(q)));
            let mut selector = Vec::new();
            for pair in query.into_iter().flat_map(|q| q.split('&')) {
                if let Some((key @ ("branch" | "tag" | "rev"), value)) = pair.split_once('=') {
                    selector.push(format!("--{key}"));
                    selector.push(value.to_owned());
                }
            }
            Some(Source::Git {
                url: url.to_owned(),
                selector,
            })
        }
        _ => None,
    }
}

/// A `--from` value: a built binary, a source directory, or a git URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum From {
    Binary(PathBuf),
    Source(Source),
}

pub fn parse_from(value: &str, cwd: &Path) -> Option<From> {
    let looks_remote = ["https://", "http://", "ssh://", "git@", "git+"]
        .iter()
        .any(|p| value.starts_with(p));
    if looks_remote {
        return Some(From::Source(Source::Git {
            url: value.trim_start_matches("git+").to_owned(),
            selector: Vec::new(),
        }));
    }
    let path = cwd.join(value);
    if path.is_dir() && path.join("Cargo.toml").is_file() {
        return Some(From::Source(Source::Path(
            std::fs::canonicalize(&path).unwrap_or(path),
        )));
    }
    path.is_file().then_some(From::Binary(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(key: &str, extra: &str) -> String {
        format!(
            r#"{{"installs":{{"ripgrep 14.1.0 (registry+https://github.com/rust-lang/crates.io-index)":{{"bins":["rg"]}},
            "{key}":{{"version_req":null,"bins":["agentic-hil"],"features":[],"all_features":false,"no_default_features":false{extra}}}}}}}"#
        )
    }

    /// The install a record with `key` and nothing extra names, and the arguments that redo it.
    fn reinstall(key: &str) -> (CargoInstall, Vec<String>) {
        let install = parse_crates2(&record(key, "")).expect("found");
        let args = install.install_args(&install.source);
        (install, args)
    }

    #[test]
    fn a_registry_install_reinstalls_by_package_name() {
        let (install, args) =
            reinstall("agentic-hil 0.1.0 (registry+https://github.com/rust-lang/crates.io-index)");
        assert_eq!(install.source, Source::Registry);
        assert_eq!(args, ["install", "--locked", "agentic-hil"]);
    }

    #[test]
    fn a_path_install_reinstalls_from_its_directory() {
        let (_, args) = reinstall("agentic-hil 0.1.0 (path+file:///src/ahil/crates/agentic-hil)");
        assert_eq!(
            args,
            [
                "install",
                "--locked",
                "--path",
                "/src/ahil/crates/agentic-hil"
            ]
        );
    }

    #[test]
    fn a_git_install_keeps_its_branch_and_drops_the_commit() {
        let (_, args) = reinstall(
            "agentic-hil 0.1.0 (git+https://example.org/ahil.git?branch=stable#0123abcd)",
        );
        assert_eq!(
            args,
            [
                "install",
                "--locked",
                "--git",
                "https://example.org/ahil.git",
                "--branch",
                "stable",
                "agentic-hil"
            ]
        );
    }

    #[test]
    fn a_version_requirement_is_a_pin() {
        let text = record(
            "agentic-hil 0.1.0 (registry+https://github.com/rust-lang/crates.io-index)",
            "",
        )
        .replace(r#""version_req":null"#, r#""version_req":"=0.1.0""#);
        assert_eq!(
            parse_crates2(&text).expect("found").pin.as_deref(),
            Some("=0.1.0")
        );
    }

    #[test]
    fn a_record_without_our_binary_is_not_our_install() {
        let text = r#"{"installs":{"agentic-hil 0.1.0 (registry+https://x)":{"bins":["other"]}}}"#;
        assert!(parse_crates2(text).is_none());
        assert!(parse_crates2("not json").is_none());
    }
}
