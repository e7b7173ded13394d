//! Staging is a stage (issue #24 item 3): the artifact a call names is validated and copied into
//! private staging by the pipeline, once, for every backend, before any device is contacted.
//!
//! For each tool whose input names an artifact (the [`USES`] table, checked against the
//! declarations' schemas) and each backend it runs on: a bad artifact is refused with its own
//! `error_type` while the backend's fake program never runs, and a good one is staged exactly once
//! (counted per workspace by `artifacts::counted`) and reaches the backend only as the staged copy.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Value, json};

use crate::artifacts::counted;
use crate::noting_backend_tests::NotingBackend;
use crate::testkit::Fixture;

/// A tool that names an artifact, how it is called with `image_path`, and the backends it stages
/// for (the others refuse it before any image is looked at).
type Use = (&'static str, fn(&str) -> Value, &'static [&'static str]);

const EVERY_BACKEND: &[&str] = &["qemu", "openocd", "pyocd", "stlink", "esptool", "probe-rs"];

#[rustfmt::skip]
const USES: &[Use] = &[
    ("flash_firmware", |image| json!({"image_path": image, "reset_after_flash": false}), EVERY_BACKEND),
    ("debug_start_session", |image| json!({"image_path": image, "mode": "attach"}), &["qemu", "openocd"]),
];

/// A bad artifact, the error it is refused with, and the tools it is bad for.
type Bad = (&'static str, &'static str, &'static [&'static str]);

const EVERY_TOOL: &[&str] = &["flash_firmware", "debug_start_session"];

#[rustfmt::skip]
const BAD: &[Bad] = &[
    ("fw/missing.elf", "artifact_not_found", EVERY_TOOL),
    ("other/fw.elf", "artifact_validation_failed", EVERY_TOOL),
    ("fw/garbage.elf", "artifact_validation_failed", EVERY_TOOL),
    ("fw/../other/fw.elf", "artifact_validation_failed", EVERY_TOOL),
    // A HEX flashes, but a debug session needs the ELF's symbols.
    ("fw/fw.hex", "artifact_validation_failed", &["debug_start_session"]),
];

/// One bench with one debugger `dut` of `kind`, whose programs (the backend, gdb) are one fake that
/// notes every invocation.
struct World {
    backend: NotingBackend,
    kind: String,
    fixture: Fixture,
}

impl World {
    fn new(kind: &str) -> Self {
        let fixture = Fixture::new();
        let backend = NotingBackend::new(&fixture, "backend");
        let exe = &backend.exe;
        let extra = match kind {
            "openocd" => {
                "    interface_cfg: interface/stlink.cfg\n    target_cfg: target/stm32f4x.cfg\n"
            }
            "pyocd" | "probe-rs" => "    target_type: stm32f405rg\n",
            "esptool" => "    com_port: uart0\n    flash_address: \"0x10000\"\n",
            _ => "",
        };
        let text = format!(
            "workspace_root: \"{ws}\"\nstate_root: \"{state}\"\nversion: 3\n\
             target:\n  name: board\n  controller: stm32f405\n\
             debuggers:\n  dut:\n    type: {kind}\n{executable}{extra}    timeout_s: 5\n\
             \x20   permissions:\n      allow_flash: true\n      allow_reset: true\n\
             com_ports:\n  uart0:\n    device: \"{uart}\"\n    identity_source: device\n\
             \x20   permissions:\n      allow_write: true\n\
             debug:\n  gdb_executable: \"{exe}\"\n\
             artifacts:\n  allowed_roots: [fw]\n  allow_upload: true\n",
            ws = fixture.workspace.display(),
            state = ahil_config::default_state_root(&fixture.env).display(),
            exe = exe.display(),
            // probe-rs runs this binary's own worker, so the fake is pinned after loading.
            executable = if kind == "probe-rs" {
                String::new()
            } else {
                format!("    executable: \"{}\"\n", exe.display())
            },
            uart = fixture.tools.join("uart0").display(),
        );
        fixture.write_config(&text);
        let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../firmware/build");
        for dir in ["fw", "other"] {
            let dir = fixture.workspace.join(dir);
            std::fs::create_dir_all(&dir).expect("artifact dir");
            std::fs::copy(built.join("ahil-fw-v1.elf"), dir.join("fw.elf")).expect("firmware");
        }
        let fw = fixture.workspace.join("fw");
        std::fs::copy(built.join("ahil-fw-v1.hex"), fw.join("fw.hex")).expect("firmware");
        std::fs::write(fw.join("garbage.elf"), b"not an elf at all").expect("garbage");
        Self {
            backend,
            kind: kind.to_owned(),
            fixture,
        }
    }

    /// The configuration, with every program the fake: never this test binary.
    fn loaded(&self) -> ahil_config::LoadedConfig {
        let mut loaded = self.fixture.load();
        if self.kind == "probe-rs" {
            let fake = ahil_config::ExecutableState::Pinned {
                path: self.backend.exe.clone(),
            };
            loaded.executables.debuggers.insert("dut".into(), fake);
        }
        loaded
    }

    /// Calls `tool` on a fresh gate; the fake's notes start empty (loading may ask its version).
    fn call(&self, tool: &str, args: Value) -> Value {
        (self.backend).call(&self.fixture, self.loaded(), tool, args)
    }

    fn invoked(&self) -> String {
        self.backend.invoked()
    }

    fn stagings(&self) -> usize {
        counted::of(&self.fixture.workspace)
    }
}

#[test]
fn a_bad_artifact_is_refused_before_any_backend_runs_on_every_backend() {
    for (tool, args, backends) in USES {
        for backend in *backends {
            let world = World::new(backend);
            for (image, error_type, bad_for) in BAD {
                if !bad_for.contains(tool) {
                    continue;
                }
                let what = format!("{tool} on {backend} with {image}");
                let before = world.stagings();
                let doc = world.call(tool, args(image));
                assert_eq!(doc["error_type"], json!(error_type), "{what}: {doc}");
                world.backend.assert_not_started(&doc, &what);
                assert!(
                    world.stagings() - before <= 1,
                    "{what}: staged {} times",
                    world.stagings() - before
                );
            }
        }
    }
}

#[test]
fn a_good_artifact_is_staged_once_and_reaches_the_backend_only_as_the_staged_copy() {
    for (tool, args, backends) in USES {
        for backend in *backends {
            let world = World::new(backend);
            let what = format!("{tool} on {backend}");
            let doc = world.call(tool, args("fw/fw.elf"));
            let error = doc["error_type"].as_str().unwrap_or_default();
            assert!(!error.starts_with("artifact_"), "{what}: {doc}");
            assert_eq!(world.stagings(), 1, "{what}: staged once: {doc}");
            let invoked = world.invoked();
            assert!(
                !invoked.contains(&world.fixture.workspace.display().to_string()),
                "{what}: the backend was given the workspace's file: {invoked}"
            );
        }
    }
}

#[test]
fn a_flash_on_a_cli_backend_hands_the_staged_copy_to_the_program() {
    // The observation above is only worth something if a backend is seen to run on the image.
    let world = World::new("openocd");
    let doc = world.call("flash_firmware", json!({"image_path": "fw/fw.elf"}));
    let invoked = world.invoked();
    assert!(
        invoked.contains("agentic-hil-artifacts-"),
        "{doc}: {invoked}"
    );
    assert_eq!(world.stagings(), 1, "{doc}");
}

#[test]
fn no_character_of_the_agents_file_name_but_its_extension_reaches_a_backend() {
    // OpenOCD evals the image path inside braces: this name would run `exec` there.
    let name = "a} [exec touch pwned] {b.elf";
    for (tool, args, backends) in USES {
        for backend in *backends {
            let world = World::new(backend);
            let fw = world.fixture.workspace.join("fw");
            std::fs::copy(fw.join("fw.elf"), fw.join(name)).expect("a copy");
            let doc = world.call(tool, args(&format!("fw/{name}")));
            let invoked = world.invoked();
            assert!(
                !invoked.contains("exec touch"),
                "{tool} on {backend}: {invoked}: {doc}"
            );
        }
    }
    let world = World::new("openocd");
    let fw = world.fixture.workspace.join("fw");
    std::fs::copy(fw.join("fw.elf"), fw.join(name)).expect("a copy");
    world.call(
        "flash_firmware",
        json!({"image_path": format!("fw/{name}")}),
    );
    assert!(
        world.invoked().contains("/image.elf\" verify"),
        "{}",
        world.invoked()
    );
}

#[test]
fn an_image_is_checked_before_a_missing_program_is_reported_on_every_backend() {
    use ahil_config::ExecutableState;

    for (tool, args, backends) in USES {
        for backend in *backends {
            let world = World::new(backend);
            let mut loaded = world.loaded();
            let unbound = ExecutableState::Unbound {
                reason: "not installed here".into(),
            };
            loaded.executables.debuggers.insert("dut".into(), unbound);
            loaded.executables.gdb = None;
            // A session on the emulated board runs no program of the debugger's own, only gdb.
            let missing = if *tool == "debug_start_session" && *backend == "qemu" {
                "gdb_not_found"
            } else {
                "debugger_not_found"
            };
            for (image, expected) in [
                ("fw/missing.elf", "artifact_not_found"),
                ("fw/fw.elf", missing),
            ] {
                let loaded = loaded.clone();
                let doc = (world.backend).call(&world.fixture, loaded, tool, args(image));
                let what = format!("{tool} on {backend} with {image}");
                assert_eq!(doc["error_type"], json!(expected), "{what}: {doc}");
                assert_eq!(doc["target_contacted"], json!(false), "{what}: {doc}");
            }
            assert_eq!(world.stagings(), 1, "{tool} on {backend}");
        }
    }
}

/// The declarations are the source: every tool whose input names an `artifact_id` has a row.
#[test]
fn the_table_covers_every_tool_whose_input_names_an_artifact() {
    use crate::catalogue::{ToolId, declarations, input_schema};

    let named: BTreeSet<&str> = declarations()
        .filter(|d| {
            d.name
                .parse::<ToolId>()
                .ok()
                .and_then(|id| input_schema(id, true))
                .is_some_and(|schema| schema["properties"].get("artifact_id").is_some())
        })
        .map(|d| d.name)
        .collect();
    let tested: BTreeSet<&str> = USES.iter().map(|(tool, _, _)| *tool).collect();
    assert_eq!(named, tested);
}
