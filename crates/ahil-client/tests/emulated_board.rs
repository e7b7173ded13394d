//! Through the client, on the emulated board that `agentic-hil sim start` runs in the test's own
//! HOME: flash, read the boot banner, read a symbol; and the server's verdicts on its configuration.

use std::path::{Path, PathBuf};
use std::process::Command;

use ahil_client::{Client, ClientError, DebugMode, FlashOptions, Launch, ReadOptions};
use serde_json::{Value, json};

/// The binary under test: `AGENTIC_HIL_BIN`, else the one cargo built beside this test. `cargo test
/// --workspace` builds it; a run of this crate alone uses whatever was built last.
fn binary() -> PathBuf {
    let path = std::env::var_os("AGENTIC_HIL_BIN").map_or_else(
        || {
            option_env!("CARGO_TARGET_DIR")
                .map_or_else(
                    || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"),
                    PathBuf::from,
                )
                .join("debug/agentic-hil")
        },
        PathBuf::from,
    );
    assert!(
        path.is_file(),
        "no agentic-hil binary at {}: build it with cargo build -p agentic-hil",
        path.display()
    );
    path
}

/// A private HOME and workspace; short paths, since QEMU's sockets live under HOME.
struct World {
    _root: tempfile::TempDir,
    bin: PathBuf,
    home: PathBuf,
    workspace: PathBuf,
}

impl World {
    fn new(bin: PathBuf) -> Self {
        let root = tempfile::Builder::new()
            .prefix("ahil-client-")
            .tempdir_in("/tmp")
            .expect("a temp dir");
        let path = std::fs::canonicalize(root.path()).expect("temp dir resolves");
        let home = path.join("home");
        let workspace = path.join("work/board-fw");
        std::fs::create_dir_all(&home).expect("home");
        std::fs::create_dir_all(&workspace).expect("workspace");
        Self {
            _root: root,
            bin,
            home,
            workspace,
        }
    }

    fn env(&self) -> Vec<(&'static str, PathBuf)> {
        vec![
            ("HOME", self.home.clone()),
            // The account's home as a debug build reads it: this test's, not the machine's.
            ("AHIL_TEST_ACCOUNT_HOME", self.home.clone()),
            ("PATH", std::env::var_os("PATH").unwrap_or_default().into()),
            ("XDG_CONFIG_HOME", self.home.join(".config")),
            ("XDG_STATE_HOME", self.home.join(".local/state")),
            ("LANG", "C.UTF-8".into()),
        ]
    }

    fn launch(&self) -> Launch {
        Launch::new(&self.workspace)
            .program(&self.bin)
            .env_clear()
            .envs(self.env())
            // Every result must match the outputSchema its tool publishes.
            .check_results(ahil_gate::catalogue_output::check_result)
    }

    fn run_json(&self, args: &[&str]) -> Value {
        let out = Command::new(&self.bin)
            .args(args)
            .arg("--json")
            .current_dir(&self.workspace)
            .env_clear()
            .envs(self.env())
            .output()
            .expect("agentic-hil runs");
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|err| {
            panic!(
                "{args:?}: not JSON ({err}): {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        assert!(out.status.success(), "{args:?}: {doc}");
        doc
    }

    fn config_path(&self) -> PathBuf {
        let dir = self.home.join(".config/agentic-hil/projects");
        let mut entries = std::fs::read_dir(&dir).expect("init wrote the projects directory");
        let entry = entries.next().expect("one project").expect("entry");
        entry.path().join("config.yaml")
    }
}

/// The board, stopped when dropped whatever the test did.
struct Board<'a>(&'a World);

impl<'a> Board<'a> {
    fn start(world: &'a World) -> Self {
        world.run_json(&["init"]);
        let state = world.home.join(".local/state/agentic-hil");
        let config = format!(
            "workspace_root: \"{ws}\"\nstate_root: \"{state}\"\nversion: 3\n\
             target:\n  name: sim\n  controller: stm32f405\n\
             debuggers:\n  board:\n    type: qemu\n    timeout_s: 10\n    permissions:\n      \
             allow_flash: true\n      allow_reset: true\n      allow_debug_execution: true\n\
             artifacts:\n  allowed_roots: [fw]\n\
             com_ports:\n  uart:\n    device: \"{uart}\"\n    resource_id: sim-uart\n\
             debug:\n  allowed_symbols: [g_u32]\n",
            ws = world.workspace.display(),
            state = state.display(),
            uart = state.join("sim/board/uart").display(),
        );
        std::fs::write(world.config_path(), config).expect("the config is written");
        let fw = world.workspace.join("fw");
        std::fs::create_dir_all(&fw).expect("fw dir");
        let build = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../firmware/build");
        for name in ["ahil-fw-v1.elf", "ahil-fw-v2.elf"] {
            std::fs::copy(build.join(name), fw.join(name)).expect("firmware copies");
        }
        let started = world.run_json(&["sim", "start", "--image", "fw/ahil-fw-v1.elf"]);
        assert_eq!(started["running"], json!(true), "{started}");
        Self(world)
    }
}

impl Drop for Board<'_> {
    fn drop(&mut self) {
        let _ = Command::new(&self.0.bin)
            .args(["sim", "stop"])
            .current_dir(&self.0.workspace)
            .env_clear()
            .envs(self.0.env())
            .output();
    }
}

#[test]
fn a_flashed_firmware_boots_and_a_symbol_reads_through_the_client_and_close_ends_the_sessions() {
    let bin = binary();
    let world = World::new(bin);
    let _board = Board::start(&world);
    let mut bench = world.launch().spawn().expect("the server starts");

    let started = bench.com_session_start("uart").expect("answers");
    assert!(started.overall_success(), "{started}");
    let flashed = bench
        .flash_firmware(
            "fw/ahil-fw-v2.elf",
            &FlashOptions {
                reset_after_flash: true,
                ..FlashOptions::default()
            },
        )
        .expect("answers");
    assert!(flashed.overall_success(), "{flashed}");
    assert_eq!(flashed["verify"], json!(true), "{flashed}");
    // The banner names the version after "boot ok": reading up to it shows the new image booted.
    let read = bench
        .com_read("uart", &ReadOptions::until("ahil-fw 2.0", 10.0))
        .expect("answers");
    assert!(read.overall_success(), "{read}");
    let text = read["data"]["text"].as_str().unwrap_or_default();
    assert!(text.contains("boot ok"), "{read}");

    let session = bench
        .debug_start_session("fw/ahil-fw-v2.elf", DebugMode::Attach)
        .expect("answers");
    assert!(session.overall_success(), "{session}");
    let value = bench.debug_symbol_value("g_u32").expect("answers");
    assert!(value.overall_success(), "{value}");
    assert_eq!(value["value_unsigned"], json!(0xDEAD_BEEF_u32), "{value}");

    assert_eq!(
        bench.open_sessions(),
        ["com_session_stop(port_id=\"uart\")", "debug_stop_session()"]
    );
    bench.close().expect("both stops are confirmed");

    // Had a session outlived the client, its device lock would refuse another server the port.
    let mut next = world.launch().spawn().expect("a second server starts");
    let taken = next.com_session_start("uart").expect("answers");
    assert!(taken.overall_success(), "{taken}");
    next.close().expect("its stop is confirmed");
}

#[test]
fn without_a_configuration_every_call_answers_config_file_not_found() {
    let bin = binary();
    let world = World::new(bin);
    let mut bench = world.launch().spawn().expect("the server starts anyway");
    let probed = bench.probe_target().expect("answers");
    assert_eq!(
        probed.error_type(),
        Some("config_file_not_found"),
        "{probed}"
    );
    assert!(probed.is_error() && !probed.overall_success(), "{probed}");
    assert_eq!(bench.close().expect("nothing to end"), Some(0));
}

#[test]
fn an_invalid_configuration_stops_the_server_with_its_refusal() {
    let bin = binary();
    let world = World::new(bin);
    world.run_json(&["init"]);
    let path = world.config_path();
    let text = std::fs::read_to_string(&path).expect("config");
    std::fs::write(&path, format!("{text}bogus_key: 1\n")).expect("config written");
    let Err(error) = world.launch().spawn() else {
        panic!("the server started on an invalid configuration")
    };
    assert_eq!(error.refusal_type(), Some("config_invalid"), "{error}");
    assert!(
        matches!(error, ClientError::Exited { code: Some(1), .. }),
        "{error}"
    );
    assert!(error.to_string().contains("bogus_key"), "{error}");
}

#[test]
fn a_missing_binary_is_a_spawn_error_naming_it() {
    let world = World::new(PathBuf::from("/nonexistent/agentic-hil"));
    let Err(error) = world.launch().spawn() else {
        panic!("a missing binary started")
    };
    assert!(matches!(error, ClientError::Spawn { .. }), "{error}");
    assert!(
        error.to_string().contains("/nonexistent/agentic-hil"),
        "{error}"
    );
    let Err(error) = Client::spawn(
        &world.workspace,
        [("AGENTIC_HIL_BIN", ""), ("PATH", "/nonexistent")],
    ) else {
        panic!("found a binary on an empty PATH")
    };
    assert!(matches!(error, ClientError::BinaryNotFound), "{error}");
}
