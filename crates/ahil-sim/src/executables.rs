//! Where another package's tests find the simulator executables (`ahil-can-bridge-sim`,
//! `ahil-psu-sim`). The simulators are not commands of the product binary, and cargo builds a
//! package's binaries only for that package's own tests (`CARGO_BIN_EXE_…` exists only there), so
//! the first call in a test process builds them with the cargo that built the caller, into the
//! caller's own target directory and profile, and every call answers the path beside the caller's
//! binaries.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The CAN bridge simulator (protocol v2 on stdin/stdout, a small ECU behind it).
pub const CAN_BRIDGE: &str = "ahil-can-bridge-sim";
/// The bench supply simulator (an RS-3005P on a pty).
pub const POWER_SUPPLY: &str = "ahil-psu-sim";
/// The benchmarks' floors (the work of a call without the gate).
pub const FLOOR: &str = "ahil-floor";

/// The path of simulator `name`, built (or found up to date) once per process.
///
/// Panics when it cannot be built: a test that needs a simulator cannot run without one, and the
/// message says why.
pub fn executable(name: &str) -> PathBuf {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let dir = BUILT.get_or_init(build).as_ref().unwrap_or_else(|why| {
        panic!("the ahil-sim simulators could not be built: {why}");
    });
    dir.join(name)
}

/// Build the simulators for the profile the running executable was built with; answers the
/// directory they land in.
fn build() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|error| format!("current_exe: {error}"))?;
    let dir =
        profile_dir(&exe).ok_or_else(|| format!("{} is not under a target dir", exe.display()))?;
    let target = dir
        .parent()
        .ok_or_else(|| format!("{} has no parent", dir.display()))?;
    let profile = match dir.file_name().and_then(|name| name.to_str()) {
        Some("debug") => "dev".to_owned(),
        Some("release") => "release".to_owned(),
        Some(other) => other.to_owned(),
        None => return Err(format!("{} has no name", dir.display())),
    };
    let cargo = option_env!("CARGO").unwrap_or("cargo");
    let status = Command::new(cargo)
        .args([
            "build",
            "--quiet",
            "--locked",
            "-p",
            "ahil-sim",
            "--bins",
            "--profile",
        ])
        .arg(&profile)
        .arg("--target-dir")
        .arg(target)
        .arg("--manifest-path")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
        .status()
        .map_err(|error| format!("{cargo} did not start: {error}"))?;
    if !status.success() {
        return Err(format!(
            "`cargo build -p ahil-sim --bins` failed ({status})"
        ));
    }
    Ok(dir.to_path_buf())
}

/// `target/<profile>` of an executable in `target/<profile>/` or `target/<profile>/deps/`.
fn profile_dir(exe: &Path) -> Option<&Path> {
    let parent = exe.parent()?;
    if parent.file_name().is_some_and(|name| name == "deps") {
        parent.parent()
    } else {
        Some(parent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_binary_in_deps_finds_the_profile_directory_above_it() {
        assert_eq!(
            profile_dir(Path::new("/t/debug/deps/can_bus-0123")),
            Some(Path::new("/t/debug"))
        );
        assert_eq!(
            profile_dir(Path::new("/t/release/agentic-hil")),
            Some(Path::new("/t/release"))
        );
    }
}
