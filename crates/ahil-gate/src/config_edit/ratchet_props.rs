//! Property: no sequence of MCP calls (`project_config_set`, `project_config_create`,
//! `project_config_adopt_hardware`, `project_config_reload_description`, and the operator's hand edits of the description in between) turns a permission from false to
//! true, neither in force nor in the file; and every grant refusal names the permission that would
//! open it.
//!
//! One emulated board runs for the whole property and is shown in every case's state root, so
//! `project_config_create` regenerates the file from a bench it finds (with no bench in sight it is
//! refused and writes nothing, which would leave regeneration out of the property).

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use serde_json::{Value, json};

use super::ratchet::permission_surface;
use crate::Bench;
use crate::testkit::Fixture;

const KEYS: &[&str] = &[
    "permissions.allow_config_permissions_write",
    "permissions.allow_config_description_write",
    "permissions.allow_recover",
    "debuggers.dut.permissions.allow_flash",
    "debuggers.dut.permissions.allow_mass_erase",
    "debuggers.dut.permissions.allow_raw_debugger_commands",
    "com_ports.uart.permissions.allow_write",
    "com_ports.fresh.permissions.allow_write",
    "com_ports.uart.device",
    "com_ports.fresh.serial_number",
    "debuggers.new.probe_id",
    "target.name",
    "debug.allow_all_symbols",
    "artifacts.allow_upload",
    "state_root",
];

#[derive(Debug, Clone)]
enum Op {
    Set(Vec<(usize, Value)>),
    Reload,
    Create,
    Adopt,
    /// The operator adds a port by hand, its grant open in the file.
    HandEdit(u8),
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!(true)),
        Just(json!(false)),
        Just(json!("SN1")),
        Just(json!(7)),
        Just(Value::Null)
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => prop::collection::vec((0..KEYS.len(), value()), 1..3).prop_map(Op::Set),
        1 => Just(Op::Reload),
        1 => Just(Op::Create),
        1 => Just(Op::Adopt),
        1 => (0u8..3).prop_map(Op::HandEdit),
    ]
}

const PORT: &str = "com_ports:\n  uart:\n    device: \"/dev/ttyUSB9\"\n    serial_number: \"UART1\"\n    permissions:\n      allow_write: false\n";

fn in_force(describe: &Value) -> BTreeMap<String, bool> {
    let p = &describe["permissions_in_force"];
    let mut doc = json!({"permissions": {}, "debug": p["debug"], "artifacts": p["artifacts"]});
    for (k, v) in p.as_object().into_iter().flatten() {
        if k.starts_with("allow_") {
            doc["permissions"][k] = v.clone();
        }
    }
    for section in ["debuggers", "com_ports", "can_buses"] {
        let entries: serde_json::Map<String, Value> = p[section]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(n, flags)| (n.clone(), json!({"permissions": flags})))
            .collect();
        doc[section] = Value::Object(entries);
    }
    permission_surface(&doc)
}

fn file_surface(fixture: &Fixture) -> BTreeMap<String, bool> {
    let config = ahil_config::load_config_file(&fixture.load().path).expect("the file loads");
    super::ratchet::config_surface(&config)
}

fn no_opening(
    before: &BTreeMap<String, bool>,
    after: &BTreeMap<String, bool>,
) -> Result<(), TestCaseError> {
    for (key, now) in after {
        let was = before.get(key).copied().unwrap_or(false);
        prop_assert!(!*now || was, "{key} went from false to true");
    }
    Ok(())
}

/// The emulated board every case's discovery finds.
struct SharedBoard {
    dir: tempfile::TempDir,
    _board: ahil_drivers::qemu::Board,
    /// How many `project_config_create` calls wrote a file, across all cases.
    created: AtomicUsize,
}

impl SharedBoard {
    fn start() -> Self {
        use ahil_drivers::qemu::{Board, BoardConfig};
        let dir = tempfile::tempdir().expect("temp dir");
        let image =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../firmware/build/ahil-fw-v1.elf");
        let board = Board::start(BoardConfig::new(dir.path()).with_image(image)).expect("a board");
        Self {
            dir,
            _board: board,
            created: AtomicUsize::new(0),
        }
    }

    /// Shows the board in `state_root` as a board started there would be: its sockets, UART link
    /// and pid file under `sim/bench`.
    fn show_in(&self, state_root: &Path) {
        let shown = state_root.join("sim/bench");
        fs::create_dir_all(&shown).expect("the sim directory");
        for name in ["qmp.sock", "gdb.sock", "uart", "qemu.pid"] {
            std::os::unix::fs::symlink(self.dir.path().join(name), shown.join(name))
                .expect("link the board");
        }
    }
}

fn run(ops: &[Op], board: &SharedBoard) -> Result<(), TestCaseError> {
    let fixture = Fixture::new();
    let text = fixture.starter().replace("com_ports: {}\n", PORT);
    let path = fixture.write_config(&text);
    board.show_in(&fixture.load().config.state_root);
    let bench = Bench::provisioned(fixture.load(), fixture.env.clone());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let describe = || {
        rt.block_on(bench.call("project_config_describe", json!({})))
            .to_value()
    };
    let mut force = in_force(&describe());
    let mut file = file_surface(&fixture);
    for op in ops {
        match op {
            Op::Set(_) | Op::Create | Op::Adopt => {
                let (tool, args) = match op {
                    Op::Set(changes) => {
                        let changes: Vec<Value> = changes
                            .iter()
                            .map(|(i, v)| json!({"key": KEYS[*i], "value": v}))
                            .collect();
                        ("project_config_set", json!({"changes": changes}))
                    }
                    Op::Create => ("project_config_create", json!({})),
                    _ => ("project_config_adopt_hardware", json!({"apply": true})),
                };
                let result = rt.block_on(bench.call(tool, args)).to_value();
                if matches!(op, Op::Create) && result["ok"] == true {
                    board.created.fetch_add(1, Ordering::Relaxed);
                }
                if let Some(kind @ ("permission_denied" | "permission_widening_denied")) =
                    result["error_type"].as_str()
                {
                    let named = result["permission"].as_str().unwrap_or_default();
                    prop_assert!(
                        named.starts_with("permissions.")
                            || named.contains(".permissions.")
                            || named.contains(".allow_"),
                        "{kind} names no permission: {result}"
                    );
                }
                let now = file_surface(&fixture);
                no_opening(&file, &now)?;
                file = now;
            }
            Op::Reload => {
                rt.block_on(bench.call("project_config_reload_description", json!({})));
            }
            Op::HandEdit(n) => {
                let current = fs::read_to_string(&path).expect("read");
                let entry = format!(
                    "  hand{n}:\n    device: \"/dev/ttyACM{n}\"\n    serial_number: \"HAND{n}\"\n    permissions:\n      allow_write: true\n"
                );
                if !current.contains(&format!("hand{n}:")) && current.contains("com_ports:\n") {
                    fs::write(
                        &path,
                        current.replacen("com_ports:\n", &format!("com_ports:\n{entry}"), 1),
                    )
                    .expect("hand edit");
                    // The operator may open what they add; only MCP calls are held to the ratchet.
                    file = file_surface(&fixture);
                }
            }
        }
        let now = in_force(&describe());
        no_opening(&force, &now)?;
        force = now;
    }
    Ok(())
}

#[test]
fn no_sequence_of_mcp_calls_opens_a_permission() {
    let board = SharedBoard::start();
    let mut runner = TestRunner::new(ProptestConfig {
        cases: 48,
        ..ProptestConfig::default()
    });
    let ops = prop::collection::vec(op(), 1..8);
    if let Err(failure) = runner.run(&ops, |ops| run(&ops, &board)) {
        panic!("{failure}");
    }
    assert!(
        board.created.load(Ordering::Relaxed) > 0,
        "no project_config_create regenerated the file, so the property never saw one"
    );
}
