//! `agentic-hil upgrade`: replace this installation with a newer build, by the method that installed
//! it (`cargo install`, or a release binary copied into place with `--from`). Dry run first: a version
//! already current installs nothing. `server_upgrade` runs this same command as a child.

mod exec;
mod install;
mod swap;
mod version;

use ahil_gate::ErrorType;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use ahil_gate::envelope::Outcome;
use serde_json::{Value, json};

use self::exec::{Ran, run_with_deadline};
use self::install::{CargoInstall, From, PACKAGE, Source};
use self::swap::LockError;
use self::version::{Version, probe};

const TOOL: &str = "agentic_hil_upgrade";

/// A step of the upgrade: its value, or the refusal that ends it.
type Step<T> = Result<T, Box<Outcome>>;
/// One cargo build of the whole workspace fits well inside this on a slow machine.
const CARGO_DEADLINE: Duration = Duration::from_mins(10);
const LOOKUP_DEADLINE: Duration = Duration::from_mins(1);
/// Enough of cargo's output to see why it failed, not a whole build log.
const OUTPUT_TAIL: usize = 4000;

pub fn run(cwd: &Path, dry_run: bool, from: Option<&str>) -> Value {
    let outcome = match upgrade(cwd, dry_run, from) {
        Ok(outcome) => outcome,
        Err(refusal) => *refusal,
    };
    outcome.to_value()
}

/// Where the new build comes from.
enum Route {
    Copy {
        new: PathBuf,
        cargo: Option<CargoInstall>,
    },
    Cargo {
        cargo: CargoInstall,
        source: Source,
    },
}

fn upgrade(cwd: &Path, dry_run: bool, from: Option<&str>) -> Step<Outcome> {
    let exe = this_binary()?;
    let route = route(&exe, cwd, from)?;
    // A dry run writes nothing, not even the lock file; everything else holds the lock throughout.
    let _lock = if dry_run {
        None
    } else {
        Some(lock(&exe, &route)?)
    };
    let previous = probe(&exe).unwrap_or_else(|_| version::running());
    match route {
        Route::Copy { new, cargo } => copy_upgrade(&exe, &new, &previous, dry_run, cargo.as_ref()),
        Route::Cargo { cargo, source } => cargo_upgrade(&exe, &cargo, &source, &previous, dry_run),
    }
}

fn route(exe: &Path, cwd: &Path, from: Option<&str>) -> Step<Route> {
    let from = match from {
        None => None,
        Some(value) => Some(install::parse_from(value, cwd).ok_or_else(|| {
            Outcome::refused(
                TOOL,
                ErrorType::InvalidArgument,
                "--from is not a binary, a source directory with Cargo.toml or a git URL.",
            )
            .with("argument", "from")
        })?),
    };
    match (from, install::detect_cargo(exe)) {
        (Some(From::Binary(new)), cargo) => Ok(Route::Copy { new, cargo }),
        (Some(From::Source(source)), Some(cargo)) => Ok(Route::Cargo { cargo, source }),
        (Some(From::Source(_)), None) => Err(Box::new(
            Outcome::refused(
                TOOL,
                ErrorType::InvalidArgument,
                "Only a cargo install upgrades from source; this binary was copied.",
            )
            .with("argument", "from")
            .with_next_step("Pass --from with a built agentic-hil binary instead."),
        )),
        (None, Some(cargo)) => {
            let source = cargo.source.clone();
            Ok(Route::Cargo { cargo, source })
        }
        (None, None) => Err(Box::new(
            Outcome::refused(
                TOOL,
                ErrorType::UpgradeManagerNotFound,
                "Not a cargo install: nothing records where a newer build comes from.",
            )
            .with("running_version", version::running().as_str())
            .with_next_step("Run `agentic-hil upgrade --from <new agentic-hil binary>`."),
        )),
    }
}

fn lock(exe: &Path, route: &Route) -> Step<swap::InstallLock> {
    match swap::lock(exe) {
        Ok(lock) => Ok(lock),
        Err(LockError::Held(pid)) => Err(Box::new(
            Outcome::refused(
                TOOL,
                ErrorType::InstallationInUse,
                "Another upgrade of this installation is in progress.",
            )
            .with(
                "held_by",
                pid.map_or(Value::Null, |pid| json!({ "pid": pid })),
            )
            .with_next_step("Wait for it to finish, then run `agentic-hil upgrade` again."),
        )),
        Err(LockError::Io(e)) => {
            let reinstall = match route {
                Route::Cargo { cargo, source } => {
                    format!("cargo {} --force", cargo.install_args(source).join(" "))
                }
                Route::Copy { new, .. } => format!("agentic-hil upgrade --from {}", new.display()),
            };
            Err(Box::new(
                Outcome::refused(
                    TOOL,
                    ErrorType::UpgradeFailed,
                    format!("The installation directory is not writable here ({e})."),
                )
                .with("reinstall_command", reinstall),
            ))
        }
    }
}

/// The file this process was started from. Linux names an already replaced one "… (deleted)"; the
/// installation is still the path.
fn this_binary() -> Step<PathBuf> {
    let exe = std::env::current_exe().map_err(|e| {
        Outcome::refused(
            TOOL,
            ErrorType::InstallationBroken,
            format!("This binary cannot find its own file ({e})."),
        )
    })?;
    let text = exe.to_string_lossy();
    let exe = text
        .strip_suffix(" (deleted)")
        .map_or_else(|| exe.clone(), PathBuf::from);
    Ok(std::fs::canonicalize(&exe).unwrap_or(exe))
}

fn cargo_upgrade(
    exe: &Path,
    cargo: &CargoInstall,
    source: &Source,
    previous: &Version,
    dry_run: bool,
) -> Step<Outcome> {
    let args = cargo.install_args(source);
    let command = format!("cargo {}", args.join(" "));
    let reinstall = format!("cargo {} --force", args.join(" "));
    if let Some(pin) = &cargo.pin {
        return Err(Box::new(Outcome::refused(
            TOOL,
            ErrorType::UpgradeBlockedByPin,
            format!(
                "This installation was pinned with --version {pin}; an upgrade would undo the pin."
            ),
        )
        .with("pin", pin.as_str())
        .with("previous_version", previous.as_str())
        .with("reinstall_command", reinstall)
        .with_next_step("Run reinstall_command yourself if the pin should go.")));
    }
    let program = install::pinned_cargo(&cargo.root).map_err(|why| {
        Outcome::refused(
            TOOL,
            ErrorType::UpgradeManagerNotFound,
            format!("cargo is needed to upgrade this cargo install, but {why}."),
        )
        .with("reinstall_command", reinstall.clone())
        .with_next_step(
            "Run reinstall_command in a shell with the cargo that installed agentic-hil.",
        )
    })?;
    let pinned_cargo = |args: &[String]| cargo_command(&program, &cargo.root, args);
    let listed = cargo_output(&pinned_cargo, &["install", "--list"]).map_err(|why| {
        Outcome::refused(
            TOOL,
            ErrorType::UpgradeManagerNotFound,
            format!("cargo is needed to upgrade this cargo install, but {why}."),
        )
        .with("reinstall_command", reinstall.clone())
    })?;
    if !listed
        .lines()
        .any(|l| l.starts_with(&format!("{PACKAGE} v")))
    {
        return Err(Box::new(
            Outcome::refused(
                TOOL,
                ErrorType::UpgradeManagerNotFound,
                "cargo's record names agentic-hil but `cargo install --list` does not.",
            )
            .with("reinstall_command", reinstall),
        ));
    }
    let available = available_version(&pinned_cargo, source);
    let base = |outcome: Outcome| {
        outcome
            .with("manager", "cargo")
            .with("command", command.as_str())
            .with("previous_version", previous.as_str())
            .with(
                "available_version",
                available
                    .as_ref()
                    .map_or(Value::Null, |v| json!(v.as_str())),
            )
            .with("running_version", version::running().as_str())
    };
    if available.as_ref().is_some_and(|v| v <= previous) {
        return Ok(base(already_current(previous)));
    }
    if dry_run {
        return Ok(base(
            Outcome::ok(
                TOOL,
                "Dry run: cargo would reinstall agentic-hil; nothing was changed.",
            )
            .with("dry_run", true)
            .with("would_install", true),
        ));
    }
    let before = swap::identity(exe);
    let ran = run_with_deadline(&mut pinned_cargo(&args), CARGO_DEADLINE);
    let failure = match ran {
        Ok(Ran::Finished(out)) if out.status.success() => None,
        Ok(Ran::Finished(out)) => Some((
            format!("`{command}` failed ({}).", out.status),
            json!({
                "stdout": tail(&out.stdout),
                "stderr": tail(&out.stderr),
                "returncode": out.status.code(),
            }),
        )),
        Ok(Ran::TimedOut) => Some((
            format!(
                "`{command}` did not finish within {} s and was stopped.",
                CARGO_DEADLINE.as_secs()
            ),
            Value::Null,
        )),
        Err(e) => Some((
            format!("`{command}` could not be started ({e})."),
            Value::Null,
        )),
    };
    if let Some((summary, install)) = failure {
        let error_type = if swap::identity(exe) == before {
            "upgrade_failed"
        } else {
            "installation_changed_after_failed_upgrade"
        };
        return Err(Box::new(
            base(Outcome::refused(
                TOOL,
                ErrorType::layer(error_type),
                summary,
            ))
            .with("install", install)
            .with("reinstall_command", reinstall)
            .with_next_step("Run reinstall_command in a shell and read cargo's error."),
        ));
    }
    finish(exe, previous, &reinstall).map(base)
}

fn copy_upgrade(
    exe: &Path,
    new: &Path,
    previous: &Version,
    dry_run: bool,
    cargo: Option<&CargoInstall>,
) -> Step<Outcome> {
    let reinstall = format!("agentic-hil upgrade --from {}", new.display());
    let candidate = probe(new).map_err(|why| {
        Outcome::refused(
            TOOL,
            ErrorType::UpgradeFailed,
            format!("The new binary is not usable: {why}. The installation is unchanged."),
        )
        .with("previous_version", previous.as_str())
        .with("reinstall_command", reinstall.clone())
    })?;
    let base = |outcome: Outcome| {
        let outcome = outcome
            .with("manager", "copy")
            .with("command", reinstall.as_str())
            .with("previous_version", previous.as_str())
            .with("available_version", candidate.as_str())
            .with("running_version", version::running().as_str());
        if cargo.is_some() {
            outcome.with(
                "warning",
                "cargo's install record still names the version cargo installed.",
            )
        } else {
            outcome
        }
    };
    if candidate == *previous {
        return Ok(base(already_current(previous)));
    }
    if candidate < *previous {
        return Err(Box::new(base(Outcome::refused(
            TOOL,
            ErrorType::UpgradeFailed,
            format!(
                "The new binary is version {}, older than the installed {}; nothing was replaced.",
                candidate.as_str(),
                previous.as_str()
            ),
        ))));
    }
    if dry_run {
        return Ok(base(
            Outcome::ok(
                TOOL,
                format!(
                    "Dry run: {} would replace {}; nothing was changed.",
                    candidate.as_str(),
                    previous.as_str()
                ),
            )
            .with("dry_run", true)
            .with("would_install", true),
        ));
    }
    let placed = swap::stage(new, exe).and_then(|staged| {
        // The copy itself must run before it goes anywhere near the installed path.
        probe(staged.path())
            .map_err(|why| std::io::Error::other(format!("the copy does not run: {why}")))?;
        swap::place(staged, exe)
    });
    if let Err(e) = placed {
        return Err(Box::new(
            base(Outcome::refused(
                TOOL,
                ErrorType::UpgradeFailed,
                format!(
                    "The new binary could not be put in place ({e}); the installation is unchanged."
                ),
            ))
            .with("reinstall_command", reinstall),
        ));
    }
    finish(exe, previous, &reinstall).map(base)
}

/// After the install: the installed file must run and say which version it is.
fn finish(exe: &Path, previous: &Version, reinstall: &str) -> Step<Outcome> {
    let installed = probe(exe).map_err(|why| {
        Outcome::refused(
            TOOL,
            ErrorType::InstallationBroken,
            format!("After the upgrade the installed binary does not run: {why}."),
        )
        .with("reinstall_command", reinstall)
        .with_next_step("Run reinstall_command in a shell.")
    })?;
    if installed == *previous {
        let mut outcome = already_current(previous);
        outcome.set("install_skipped", false);
        return Ok(outcome);
    }
    Ok(Outcome::ok(
        TOOL,
        format!(
            "Upgraded agentic-hil {} to {} on disk; running servers keep the old version until they restart.",
            previous.as_str(),
            installed.as_str()
        ),
    )
    .with("upgraded_on_disk", true)
    .with("version", installed.as_str())
    .with("restart_required", true)
    .with_next_step("Restart the MCP server (restart the agent host's session) to run the new version."))
}

fn already_current(previous: &Version) -> Outcome {
    Outcome::ok(
        TOOL,
        format!("agentic-hil {} is already current.", previous.as_str()),
    )
    .with("already_current", true)
    .with("install_skipped", true)
    .with("upgraded_on_disk", false)
    .with("version", previous.as_str())
    .with("restart_required", false)
}

/// The newest version the source offers, where that can be known without building: the registry's
/// index via `cargo search`, a path's manifest via `cargo metadata`. A git source is not known ahead.
fn available_version(cargo: &CargoCommand<'_>, source: &Source) -> Option<Version> {
    match source {
        Source::Registry => {
            let out = cargo_output(cargo, &["search", PACKAGE, "--limit", "1"]).ok()?;
            out.lines().find_map(|line| {
                let rest = line.strip_prefix(PACKAGE)?.trim_start().strip_prefix('=')?;
                Version::parse(rest.trim().split('"').nth(1)?)
            })
        }
        Source::Path(dir) => {
            let manifest = dir.join("Cargo.toml");
            let manifest = manifest.to_string_lossy();
            let out = cargo_output(
                cargo,
                &[
                    "metadata",
                    "--no-deps",
                    "--format-version",
                    "1",
                    "--manifest-path",
                    &manifest,
                ],
            )
            .ok()?;
            let doc: Value = serde_json::from_str(&out).ok()?;
            doc.get("packages")?
                .as_array()?
                .iter()
                .find(|p| p.get("name").and_then(Value::as_str) == Some(PACKAGE))
                .and_then(|p| Version::parse(p.get("version")?.as_str()?))
        }
        Source::Git { .. } => None,
    }
}

/// Builds a command for the pinned cargo with these arguments.
type CargoCommand<'a> = dyn Fn(&[String]) -> Command + 'a;

/// The pinned `cargo` with the child environment, and what cargo needs to act on this install and
/// no other: `CARGO_HOME` is the install root (where it installs and keeps its record), and its
/// PATH is the root's `bin` (rustup's proxies, the toolchain) before the system's directories. It
/// runs in the install root: cargo reads `.cargo/config.toml` from its working directory up (a
/// `cargo search` would take the workspace's registry, credential provider or proxy), and the
/// server runs in the agent's workspace.
fn cargo_command(program: &Path, root: &Path, args: &[String]) -> Command {
    let mut command = exec::pinned(program);
    let mut path = root.join("bin").into_os_string();
    path.push(":");
    path.push(ahil_gate::child::CHILD_PATH);
    command
        .env("CARGO_HOME", root)
        .env("PATH", path)
        .current_dir(root)
        .args(args);
    command
}

fn cargo_output(cargo: &CargoCommand<'_>, args: &[&str]) -> Result<String, String> {
    let owned: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    match run_with_deadline(&mut cargo(&owned), LOOKUP_DEADLINE) {
        Err(e) => Err(format!("`cargo` could not be started ({e})")),
        Ok(Ran::TimedOut) => Err(format!("`cargo {}` did not answer in time", args.join(" "))),
        Ok(Ran::Finished(out)) if out.status.success() => {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        }
        Ok(Ran::Finished(out)) => Err(format!(
            "`cargo {}` failed ({})",
            args.join(" "),
            out.status
        )),
    }
}

fn tail(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let start = text.len().saturating_sub(OUTPUT_TAIL);
    let start = (start..text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len());
    text[start..].to_owned()
}
