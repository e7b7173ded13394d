//! `agentic-hil upgrade` and `server_upgrade`, against installations built in temp dirs: a `cargo install`
//! (cargo's record plus a fake `cargo` beside the binary that "installs" a script printing a newer
//! version, while a look-alike `cargo` first on PATH must never run) and a
//! copied binary upgraded `--from` another file. No network anywhere.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};
use support::{World, call, make_executable};

const RUNNING: &str = env!("CARGO_PKG_VERSION");
const NEWER: &str = "99.0.0";
const REGISTRY_KEY: &str =
    "agentic-hil 0.1.0 (registry+https://github.com/rust-lang/crates.io-index)";

/// Answers what `upgrade` asks cargo. Markers in `$CARGO_HOME` choose how `install` behaves.
const FAKE_CARGO: &str = r#"#!/bin/sh
echo "$*" >> "$CARGO_HOME/calls.log"
pwd >> "$CARGO_HOME/cwd.log"
case "$1" in
  install)
    if [ "$2" = "--list" ]; then printf 'agentic-hil v0.1.0:\n    agentic-hil\n'; exit 0; fi
    if [ -f "$CARGO_HOME/wait" ]; then
      while [ ! -f "$CARGO_HOME/release" ]; do sleep 0.05; done
    fi
    if [ -f "$CARGO_HOME/half" ]; then
      printf 'partial' > "$CARGO_HOME/bin/.partial" && mv "$CARGO_HOME/bin/.partial" "$CARGO_HOME/bin/agentic-hil"
    fi
    if [ -f "$CARGO_HOME/fail" ]; then echo "error: could not compile agentic-hil" >&2; exit 101; fi
    cp "$CARGO_HOME/next" "$CARGO_HOME/bin/.next" && mv "$CARGO_HOME/bin/.next" "$CARGO_HOME/bin/agentic-hil"
    echo "  Installed package agentic-hil" >&2
    ;;
  search)
    printf 'agentic-hil = "%s"    # the bench gate\n' "$(cat "$CARGO_HOME/published")"
    ;;
  *) exit 2 ;;
esac
"#;

fn version_script(version: &str) -> String {
    format!("#!/bin/sh\necho \"agentic-hil {version}\"\n")
}

/// Puts the built binary at `path` without copying 150 MB: a hard link, which a rename over `path`
/// replaces without touching the original.
fn install_binary(path: &Path) {
    std::fs::create_dir_all(path.parent().expect("dir")).expect("bin dir");
    if std::fs::hard_link(World::binary(), path).is_err() {
        std::fs::copy(World::binary(), path).expect("copy the binary");
    }
}

fn write_script(path: &Path, text: &str) {
    std::fs::write(path, text).expect("script");
    make_executable(path);
}

/// A world whose agentic-hil was installed by (fake) cargo into `$CARGO_HOME/bin`.
struct CargoInstall {
    world: World,
    cargo_home: PathBuf,
    fake_bin: PathBuf,
}

impl CargoInstall {
    fn new() -> Self {
        Self::with_record(REGISTRY_KEY, "null")
    }

    fn with_record(key: &str, version_req: &str) -> Self {
        let world = World::new();
        let cargo_home = world.home.join("cargo-home");
        install_binary(&cargo_home.join("bin/agentic-hil"));
        let record = format!(
            r#"{{"installs":{{"{key}":{{"version_req":{version_req},"bins":["agentic-hil"],"features":[],"all_features":false,"no_default_features":false,"profile":"release"}}}}}}"#
        );
        std::fs::write(cargo_home.join(".crates2.json"), record).expect("record");
        std::fs::write(cargo_home.join("published"), NEWER).expect("published");
        write_script(&cargo_home.join("next"), &version_script(NEWER));
        write_script(&cargo_home.join("bin/cargo"), FAKE_CARGO);
        let fake_bin = world.home.join("fake-bin");
        std::fs::create_dir_all(&fake_bin).expect("fake bin");
        write_script(
            &fake_bin.join("cargo"),
            &format!(
                "#!/bin/sh\necho \"$*\" >> '{}'\nexit 0\n",
                fake_bin.join("ran").display()
            ),
        );
        Self {
            world,
            cargo_home,
            fake_bin,
        }
    }

    fn exe(&self) -> PathBuf {
        self.cargo_home.join("bin/agentic-hil")
    }

    fn marker(&self, name: &str) {
        std::fs::write(self.cargo_home.join(name), "").expect("marker");
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(self.exe());
        self.world.scrub(&mut cmd);
        cmd.env("PATH", format!("{}:/usr/bin:/bin", self.fake_bin.display()))
            .env("CARGO_HOME", &self.cargo_home);
        cmd
    }

    fn upgrade(&self, args: &[&str]) -> Value {
        parse(
            &self
                .command()
                .arg("upgrade")
                .args(args)
                .arg("--json")
                .output()
                .expect("runs"),
        )
    }

    /// Whether the look-alike `cargo` first on PATH was ever run.
    fn path_cargo_ran(&self) -> bool {
        self.fake_bin.join("ran").exists()
    }

    fn cargo_calls(&self) -> String {
        std::fs::read_to_string(self.cargo_home.join("calls.log")).unwrap_or_default()
    }

    fn installed_version(&self) -> String {
        version_of(&self.exe())
    }

    /// Whether cargo was ever called with `args`, against every call it had.
    fn assert_cargo_called(&self, args: &str, called: bool) {
        let calls = self.cargo_calls();
        assert_eq!(calls.contains(args), called, "{args} in {calls}");
    }

    /// The binary on disk is still the running version.
    fn assert_still_the_running_version(&self) {
        assert_eq!(self.installed_version(), format!("agentic-hil {RUNNING}"));
    }
}

fn parse(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "one JSON document ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn version_of(binary: &Path) -> String {
    let out = Command::new(binary)
        .arg("--version")
        .output()
        .expect("runs");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn a_cargo_install_is_upgraded_by_cargo_and_reports_both_versions() {
    let install = CargoInstall::new();
    let doc = install.upgrade(&[]);
    assert_eq!(doc["ok"], json!(true), "{doc}");
    assert_eq!(doc["upgraded_on_disk"], json!(true));
    assert_eq!(doc["previous_version"], json!(RUNNING));
    assert_eq!(doc["version"], json!(NEWER));
    assert_eq!(doc["restart_required"], json!(true));
    assert_eq!(doc["manager"], json!("cargo"));
    assert_eq!(doc["command"], json!("cargo install --locked agentic-hil"));
    let calls = install.cargo_calls();
    assert!(calls.contains("install --list"), "dry run first: {calls}");
    assert!(calls.contains("search agentic-hil"), "{calls}");
    assert!(calls.contains("install --locked agentic-hil"), "{calls}");
    assert_eq!(install.installed_version(), format!("agentic-hil {NEWER}"));
    // The hard-linked original is untouched: cargo replaced the name, not the file.
    assert_eq!(
        version_of(Path::new(World::binary())),
        format!("agentic-hil {RUNNING}")
    );
}

#[test]
fn the_upgrade_runs_the_cargo_beside_its_install_record_never_the_one_path_or_cargo_home_names() {
    let install = CargoInstall::new();
    let elsewhere = install.world.home.join("other-cargo-home");
    std::fs::create_dir_all(elsewhere.join("bin")).expect("dir");
    let out = install
        .command()
        .env("CARGO_HOME", &elsewhere)
        .args(["upgrade", "--json"])
        .output()
        .expect("runs");
    let doc = parse(&out);
    assert_eq!(doc["ok"], json!(true), "{doc}");
    assert!(!install.path_cargo_ran(), "the cargo on PATH ran");
    install.assert_cargo_called("install --locked agentic-hil", true);
    assert_eq!(install.installed_version(), format!("agentic-hil {NEWER}"));
}

#[test]
fn cargo_runs_in_its_install_root_never_in_the_workspace_where_a_cargo_config_could_steer_it() {
    let install = CargoInstall::new();
    let dot_cargo = install.world.workspace.join(".cargo");
    std::fs::create_dir_all(&dot_cargo).expect(".cargo");
    std::fs::write(
        dot_cargo.join("config.toml"),
        "[registry]\nglobal-credential-providers = [\"cargo:token-from-stdout /bin/false\"]\n",
    )
    .expect("config");
    let doc = install.upgrade(&[]);
    assert_eq!(doc["ok"], json!(true), "{doc}");
    let cwd = std::fs::read_to_string(install.cargo_home.join("cwd.log")).expect("cargo ran");
    let root = install.cargo_home.canonicalize().expect("root");
    for line in cwd.lines() {
        assert_eq!(Path::new(line), root, "cargo ran in {line}");
    }
}

#[test]
fn a_cargo_install_without_its_cargo_beside_it_is_refused_and_nothing_else_runs() {
    let install = CargoInstall::new();
    std::fs::remove_file(install.cargo_home.join("bin/cargo")).expect("remove cargo");
    let doc = install.upgrade(&[]);
    assert_eq!(doc["ok"], json!(false), "{doc}");
    assert_eq!(
        doc["error_type"],
        json!("upgrade_manager_not_found"),
        "{doc}"
    );
    assert!(!install.path_cargo_ran(), "the cargo on PATH ran");
    install.assert_still_the_running_version();
}

#[test]
fn a_dry_run_names_the_cargo_command_and_changes_nothing() {
    let install = CargoInstall::new();
    let doc = install.upgrade(&["--dry-run"]);
    assert_eq!(doc["ok"], json!(true), "{doc}");
    assert_eq!(doc["dry_run"], json!(true));
    assert_eq!(doc["would_install"], json!(true));
    assert_eq!(doc["available_version"], json!(NEWER));
    assert_eq!(doc["command"], json!("cargo install --locked agentic-hil"));
    install.assert_cargo_called("--locked", false);
    install.assert_still_the_running_version();
}

#[test]
fn an_installation_already_current_is_not_reinstalled() {
    let install = CargoInstall::new();
    std::fs::write(install.cargo_home.join("published"), RUNNING).expect("published");
    let doc = install.upgrade(&[]);
    assert_eq!(doc["ok"], json!(true), "{doc}");
    assert_eq!(doc["already_current"], json!(true));
    assert_eq!(doc["install_skipped"], json!(true));
    assert_eq!(doc["upgraded_on_disk"], json!(false));
    install.assert_cargo_called("--locked", false);
}

#[test]
fn a_path_install_is_reinstalled_from_its_recorded_directory() {
    let install = CargoInstall::with_record(
        "agentic-hil 0.1.0 (path+file:///src/ahil/crates/agentic-hil)",
        "null",
    );
    let doc = install.upgrade(&[]);
    assert_eq!(doc["ok"], json!(true), "{doc}");
    assert_eq!(
        doc["command"],
        json!("cargo install --locked --path /src/ahil/crates/agentic-hil")
    );
    // cargo metadata is not answered by the fake: the version is learnt after the install instead.
    assert_eq!(doc["available_version"], Value::Null);
    assert_eq!(doc["version"], json!(NEWER));
}

#[test]
fn a_source_directory_given_with_from_is_installed_by_cargo_from_that_path() {
    let install = CargoInstall::new();
    let source = install.world.home.join("src/agentic-hil");
    std::fs::create_dir_all(&source).expect("source dir");
    std::fs::write(
        source.join("Cargo.toml"),
        "[package]\nname = \"agentic-hil\"\n",
    )
    .expect("manifest");
    let doc = install.upgrade(&["--from", source.to_str().expect("utf-8")]);
    assert_eq!(doc["ok"], json!(true), "{doc}");
    // The terminal shows HOME as `~` (the output step); cargo got the absolute path.
    assert_eq!(
        doc["command"],
        json!("cargo install --locked --path ~/src/agentic-hil")
    );
    install.assert_cargo_called(
        &format!("install --locked --path {}", source.display()),
        true,
    );
    assert_eq!(doc["version"], json!(NEWER));
}

#[test]
fn a_pinned_cargo_install_is_not_upgraded() {
    let install = CargoInstall::with_record(REGISTRY_KEY, r#""=0.1.0""#);
    let doc = install.upgrade(&[]);
    assert_eq!(doc["error_type"], json!("upgrade_blocked_by_pin"), "{doc}");
    assert_eq!(doc["pin"], json!("=0.1.0"));
    assert_eq!(
        doc["reinstall_command"],
        json!("cargo install --locked agentic-hil --force")
    );
    assert!(!install.cargo_calls().contains("--locked"));
    install.assert_still_the_running_version();
}

#[test]
fn a_failed_cargo_install_reports_cargos_output_and_the_reinstall_command() {
    let install = CargoInstall::new();
    install.marker("fail");
    let out = install
        .command()
        .args(["upgrade", "--json"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let doc = parse(&out);
    assert_eq!(doc["error_type"], json!("upgrade_failed"), "{doc}");
    assert_eq!(doc["install"]["returncode"], json!(101));
    assert!(
        doc["install"]["stderr"]
            .as_str()
            .is_some_and(|s| s.contains("could not compile")),
        "{doc}"
    );
    assert_eq!(
        doc["reinstall_command"],
        json!("cargo install --locked agentic-hil --force")
    );
    install.assert_still_the_running_version();
}

#[test]
fn a_cargo_install_that_failed_after_replacing_the_binary_says_the_installation_changed() {
    let install = CargoInstall::new();
    install.marker("half");
    install.marker("fail");
    let doc = install.upgrade(&[]);
    assert_eq!(
        doc["error_type"],
        json!("installation_changed_after_failed_upgrade"),
        "{doc}"
    );
    assert!(doc["reinstall_command"].is_string(), "{doc}");
}

#[test]
fn an_install_that_leaves_a_binary_that_does_not_run_is_reported_broken() {
    let install = CargoInstall::new();
    write_script(&install.cargo_home.join("next"), "#!/bin/sh\nexit 3\n");
    let doc = install.upgrade(&[]);
    assert_eq!(doc["error_type"], json!("installation_broken"), "{doc}");
    assert!(doc["reinstall_command"].is_string(), "{doc}");
}

#[test]
fn a_second_upgrade_of_one_installation_is_refused_while_the_first_runs() {
    let install = CargoInstall::new();
    install.marker("wait");
    let first = install
        .command()
        .args(["upgrade", "--json"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("first upgrade starts");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !install.cargo_calls().contains("install --locked") {
        assert!(
            std::time::Instant::now() < deadline,
            "the first upgrade reaches cargo"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let second = install.upgrade(&[]);
    assert_eq!(
        second["error_type"],
        json!("installation_in_use"),
        "{second}"
    );
    assert_eq!(second["held_by"]["pid"], json!(first.id()));
    install.marker("release");
    let first = parse(&first.wait_with_output().expect("first finishes"));
    assert_eq!(first["upgraded_on_disk"], json!(true), "{first}");
}

/// A world whose agentic-hil was copied into `<home>/opt/bin`, with no cargo record anywhere.
fn copied_install() -> (World, PathBuf) {
    let world = World::new();
    let exe = world.home.join("opt/bin/agentic-hil");
    install_binary(&exe);
    (world, exe)
}

fn run_copied(world: &World, exe: &Path, args: &[&str]) -> Value {
    let mut cmd = Command::new(exe);
    world.scrub(&mut cmd);
    cmd.env("CARGO_HOME", world.home.join("no-cargo"));
    parse(
        &cmd.arg("upgrade")
            .args(args)
            .arg("--json")
            .output()
            .expect("runs"),
    )
}

#[test]
fn a_copied_binary_is_replaced_by_a_newer_one_given_with_from() {
    let (world, exe) = copied_install();
    let new = world.home.join("agentic-hil-99");
    write_script(&new, &version_script(NEWER));
    let doc = run_copied(&world, &exe, &["--from", new.to_str().expect("utf-8")]);
    assert_eq!(doc["ok"], json!(true), "{doc}");
    assert_eq!(doc["manager"], json!("copy"));
    assert_eq!(doc["upgraded_on_disk"], json!(true));
    assert_eq!(doc["previous_version"], json!(RUNNING));
    assert_eq!(doc["version"], json!(NEWER));
    assert_eq!(version_of(&exe), format!("agentic-hil {NEWER}"));
    let mut left: Vec<String> = std::fs::read_dir(exe.parent().expect("dir"))
        .expect("ls")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        [".agentic-hil-upgrade.lock", "agentic-hil"],
        "nothing staged is left"
    );
}

#[test]
fn a_dry_run_from_a_binary_replaces_nothing() {
    let (world, exe) = copied_install();
    let new = world.home.join("agentic-hil-99");
    write_script(&new, &version_script(NEWER));
    let doc = run_copied(
        &world,
        &exe,
        &["--dry-run", "--from", new.to_str().expect("utf-8")],
    );
    assert_eq!(doc["would_install"], json!(true), "{doc}");
    assert_eq!(version_of(&exe), format!("agentic-hil {RUNNING}"));
    let left: Vec<_> = std::fs::read_dir(exe.parent().expect("dir"))
        .expect("ls")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(
        left,
        ["agentic-hil"],
        "a dry run writes nothing, not even a lock"
    );
}

#[test]
fn a_copied_binary_without_from_is_told_the_command_to_run() {
    let (world, exe) = copied_install();
    let doc = run_copied(&world, &exe, &[]);
    assert_eq!(
        doc["error_type"],
        json!("upgrade_manager_not_found"),
        "{doc}"
    );
    assert!(
        doc["next_step"]
            .as_str()
            .is_some_and(|s| s.contains("--from")),
        "{doc}"
    );
}

#[test]
fn a_from_binary_that_is_older_or_not_agentic_hil_replaces_nothing() {
    let (world, exe) = copied_install();
    let older = world.home.join("old");
    write_script(&older, &version_script("0.0.1"));
    let stranger = world.home.join("stranger");
    write_script(&stranger, "#!/bin/sh\necho 'ls (GNU coreutils) 9.1'\n");
    let hangs = world.home.join("bad");
    write_script(&hangs, "#!/bin/sh\nexit 1\n");
    for candidate in [&older, &stranger, &hangs] {
        let doc = run_copied(
            &world,
            &exe,
            &["--from", candidate.to_str().expect("utf-8")],
        );
        assert_eq!(doc["error_type"], json!("upgrade_failed"), "{doc}");
        assert!(
            doc["reinstall_command"].is_string() || candidate == &older,
            "{doc}"
        );
        assert_eq!(version_of(&exe), format!("agentic-hil {RUNNING}"));
    }
    let doc = run_copied(&world, &exe, &["--from", "no/such/file"]);
    assert_eq!(doc["error_type"], json!("invalid_argument"), "{doc}");
}

#[test]
fn the_same_version_from_a_binary_is_already_current() {
    let (world, exe) = copied_install();
    let same = world.home.join("same");
    write_script(&same, &version_script(RUNNING));
    let doc = run_copied(&world, &exe, &["--from", same.to_str().expect("utf-8")]);
    assert_eq!(doc["already_current"], json!(true), "{doc}");
    assert_eq!(doc["install_skipped"], json!(true));
}

#[test]
fn a_from_binary_that_runs_only_where_it_lies_is_not_put_in_place() {
    // Like a release binary that loads a library from its own directory: it answers where it was
    // unpacked, but its copy beside the installation does not run.
    let (world, exe) = copied_install();
    let unpacked = world.home.join("unpacked");
    std::fs::create_dir_all(&unpacked).expect("unpacked dir");
    std::fs::write(unpacked.join("libahil.so"), "").expect("library");
    let new = unpacked.join("agentic-hil");
    write_script(
        &new,
        &format!(
            "#!/bin/sh\n[ -f \"$(dirname \"$0\")/libahil.so\" ] || {{ echo 'libahil.so: not found' >&2; exit 127; }}\necho \"agentic-hil {NEWER}\"\n"
        ),
    );
    assert_eq!(version_of(&new), format!("agentic-hil {NEWER}"));
    let doc = run_copied(&world, &exe, &["--from", new.to_str().expect("utf-8")]);
    assert_eq!(doc["error_type"], json!("upgrade_failed"), "{doc}");
    assert!(doc["reinstall_command"].is_string(), "{doc}");
    assert_eq!(version_of(&exe), format!("agentic-hil {RUNNING}"));
    let mut left: Vec<String> = std::fs::read_dir(exe.parent().expect("dir"))
        .expect("ls")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        [".agentic-hil-upgrade.lock", "agentic-hil"],
        "the copy that did not run is gone"
    );
}

// ---- over MCP ----

async fn connect(install: &CargoInstall) -> support::Client {
    use rmcp::ServiceExt;
    let mut cmd = install.command();
    cmd.arg("mcp-stdio");
    let transport = rmcp::transport::TokioChildProcess::new(tokio::process::Command::from(cmd))
        .expect("the server process starts");
    ().serve(transport)
        .await
        .expect("the MCP handshake succeeds")
}

fn initialised(install: &CargoInstall) {
    let (doc, code) = install.world.run_json(&["init"]);
    assert_eq!(code, Some(0), "{doc}");
}

#[tokio::test]
async fn server_upgrade_upgrades_a_cargo_install_and_the_running_server_keeps_answering() {
    let install = CargoInstall::new();
    initialised(&install);
    let client = connect(&install).await;
    let (doc, is_error) = call(&client, "server_upgrade", json!({})).await;
    assert!(!is_error, "{doc}");
    assert_eq!(doc["upgraded_on_disk"], json!(true), "{doc}");
    assert_eq!(doc["version"], json!(NEWER));
    assert_eq!(doc["running_version"], json!(RUNNING));
    assert_eq!(doc["restart_required"], json!(true));
    assert_eq!(install.installed_version(), format!("agentic-hil {NEWER}"));
    // The server runs from the replaced file's old inode and still answers.
    let (describe, is_error) = call(&client, "project_config_describe", json!({})).await;
    assert!(!is_error, "{describe}");
    client.cancel().await.expect("the session closes");
}

#[tokio::test]
async fn server_upgrade_needs_allow_upgrade() {
    let install = CargoInstall::new();
    initialised(&install);
    let (doc, code) = install
        .world
        .run_json(&["revoke", "permissions.allow_upgrade"]);
    assert_eq!(code, Some(0), "{doc}");
    let client = connect(&install).await;
    let (doc, is_error) = call(&client, "server_upgrade", json!({})).await;
    assert!(is_error);
    assert_eq!(doc["error_type"], json!("permission_denied"), "{doc}");
    install.assert_cargo_called("install", false);
    client.cancel().await.expect("the session closes");
}

#[tokio::test]
async fn server_upgrade_is_refused_while_a_run_holds_the_bench() {
    let install = CargoInstall::new();
    initialised(&install);
    install
        .world
        .bind_fake_openocd("#!/bin/sh\necho 'Open On-Chip Debugger 0.12.0' >&2\n");
    let client = connect(&install).await;
    let (run, is_error) = call(
        &client,
        "bench_run_start",
        json!({"devices": [{"kind": "debugger"}]}),
    )
    .await;
    assert!(!is_error, "{run}");
    let (doc, is_error) = call(&client, "server_upgrade", json!({})).await;
    assert!(is_error);
    assert_eq!(doc["error_type"], json!("upgrade_in_open_run"), "{doc}");
    install.assert_cargo_called("install", false);
    install.assert_still_the_running_version();
    client.cancel().await.expect("the session closes");
}

#[tokio::test]
async fn a_server_upgrade_whose_command_gives_no_result_names_the_command_for_the_operator() {
    let install = CargoInstall::new();
    initialised(&install);
    let client = connect(&install).await;
    // The installed file is replaced under the running server by one that answers no JSON.
    let exe = install.exe();
    let swapped = exe.with_file_name(".swapped");
    write_script(&swapped, "#!/bin/sh\necho 'not a result'\n");
    std::fs::rename(&swapped, &exe).expect("the installation is swapped");
    let (doc, is_error) = call(&client, "server_upgrade", json!({})).await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], json!("upgrade_failed"), "{doc}");
    assert_eq!(
        doc["reinstall_command"],
        json!("agentic-hil upgrade"),
        "{doc}"
    );
    client.cancel().await.expect("the session closes");
}
