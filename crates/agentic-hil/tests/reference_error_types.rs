//! Conditions an operator or agent can bring about that the reference 0.25 answers with an
//! `error_type` of its own: each test makes the same calls on our server (or command line) and on
//! the reference's, in one world, and holds both to the same answer.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use serde_json::{Value, json};
use support::World;
use support::raw::Mcp;

/// Both programs: ours first, then the reference.
fn programs() -> [PathBuf; 2] {
    [PathBuf::from(World::binary()), support::reference()]
}

/// `init`, with the one debugger's executable at `exe` (written with `contents` and `mode`) and
/// its probe bound, so a call gets as far as starting the program.
fn bench_with_debugger(contents: &[u8], mode: u32) -> World {
    let world = World::new();
    let (_, code) = world.run_json(&["init"]);
    assert_eq!(code, Some(0), "init succeeds");
    let tools = world.home.join("tools");
    std::fs::create_dir_all(&tools).expect("tools dir");
    let exe = tools.join("openocd");
    std::fs::write(&exe, contents).expect("the executable is written");
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(mode)).expect("chmod");
    let path = world.config_path();
    let text = std::fs::read_to_string(&path)
        .expect("config")
        .replacen(
            "executable: null",
            &format!("executable: \"{}\"", exe.display()),
            1,
        )
        .replacen("probe_id: null", "probe_id: \"BOARD7\"", 1);
    std::fs::write(&path, text).expect("bind the debugger");
    let fw = world.workspace.join("fw");
    std::fs::create_dir_all(&fw).expect("fw dir");
    std::fs::copy(support::firmware_image(), fw.join("fw.elf")).expect("firmware copies");
    world
}

/// Each of `tools`, on both servers, is refused `error_type`; `check` sees each refusal too.
fn each_refused(world: &World, tools: &[(&str, Value)], error_type: &str, check: impl Fn(&Value)) {
    for program in programs() {
        let mut mcp = Mcp::start(world, &program);
        for (tool, args) in tools {
            let result = mcp.call(tool, args);
            let doc = &result["structuredContent"];
            let who = format!("{tool} by {}", program.display());
            assert_eq!(result["isError"], true, "{who}: {result}");
            assert_eq!(doc["error_type"], error_type, "{who}: {doc}");
            check(doc);
        }
    }
}

fn debugger_tools() -> Vec<(&'static str, Value)> {
    vec![
        ("debugger_info", json!({})),
        ("probe_target", json!({})),
        ("reset_target", json!({})),
        ("flash_firmware", json!({"image_path": "fw/fw.elf"})),
    ]
}

#[test]
fn a_debugger_executable_without_its_execute_bit_is_not_executable_here_and_in_the_reference() {
    let world = bench_with_debugger(b"#!/bin/sh\nexit 0\n", 0o644);
    each_refused(
        &world,
        &debugger_tools(),
        "debugger_not_executable",
        |doc| {
            assert_eq!(doc["not_executable_reason"], "permission_denied", "{doc}");
            assert_eq!(doc["target_contacted"], false, "{doc}");
        },
    );
}

#[test]
fn a_debugger_executable_that_is_no_program_is_not_executable_here_and_in_the_reference() {
    let world = bench_with_debugger(b"\x00\x01 not a program\n", 0o755);
    each_refused(
        &world,
        &debugger_tools(),
        "debugger_not_executable",
        |doc| {
            assert_eq!(
                doc["not_executable_reason"], "not_an_executable_image",
                "{doc}"
            );
            assert_eq!(doc["target_contacted"], false, "{doc}");
        },
    );
}

#[test]
fn a_junit_file_that_cannot_be_written_fails_a_passing_run_here_and_in_the_reference() {
    let board = support::raw::EchoBoard::start();
    let world = World::new();
    support::raw::configure_uart(&world, &board.device);
    let plan = world.write_plan(
        "p.yaml",
        "version: 5\nname: p\nsteps:\n\
         - {device: uart0, action: uart_open}\n- {device: uart0, action: uart_close}\n",
    );
    // A directory where the file should go refuses the write, whoever runs it.
    std::fs::create_dir_all(world.workspace.join("out/junit.xml")).expect("the blocking dir");
    for program in programs() {
        let out = world
            .command_of(&program)
            .args(["test-reactor", "--test-config", &plan])
            .args(["--junit-xml", "out/junit.xml", "--json"])
            .output()
            .expect("test-reactor runs");
        let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
        let who = program.display();
        assert_eq!(out.status.code(), Some(1), "{who}: {doc}");
        assert_eq!(doc["ok"], false, "{who}: {doc}");
        assert_eq!(doc["error_type"], "junit_xml_write_failed", "{who}: {doc}");
        assert_eq!(
            doc["junit_xml_error"]["error_type"], "junit_xml_write_failed",
            "{who}: {doc}"
        );
    }
}

#[test]
fn a_gdb_removed_after_the_server_started_is_gdb_not_found_before_any_server_here_and_in_the_reference()
 {
    // A version check may run it; anything else would be the debug server.
    let openocd = "#!/bin/sh\n[ \"$1\" = --version ] && echo 'Open On-Chip Debugger 0.12.0' && exit 0\n\
                   echo \"$@\" >> \"$0.ran\"\nsleep 5\n";
    let world = bench_with_debugger(openocd.as_bytes(), 0o755);
    let gdb = world.home.join("tools/gdb");
    std::fs::write(&gdb, "#!/bin/sh\nexit 1\n").expect("the gdb stand-in");
    support::make_executable(&gdb);
    let path = world.config_path();
    let text = std::fs::read_to_string(&path).expect("config").replacen(
        "gdb_executable: null",
        &format!("gdb_executable: \"{}\"", gdb.display()),
        1,
    );
    std::fs::write(&path, text).expect("name the gdb");
    for program in programs() {
        std::fs::copy(world.home.join("tools/openocd"), &gdb).expect("gdb is back");
        let mut mcp = Mcp::start(&world, &program);
        std::fs::remove_file(&gdb).expect("gdb goes away");
        let result = mcp.call("debug_start_session", &json!({"image_path": "fw/fw.elf"}));
        let doc = &result["structuredContent"];
        let who = program.display();
        assert_eq!(result["isError"], true, "{who}: {result}");
        assert_eq!(doc["error_type"], "gdb_not_found", "{who}: {doc}");
        assert_eq!(doc["target_contacted"], false, "{who}: {doc}");
    }
    assert!(
        !world.home.join("tools/openocd.ran").exists(),
        "no debug server was started"
    );
}

/// A process bridge that opens, answers every read with `READ_RESULT` (a Python expression over the
/// request's `params`), and closes in a safe state.
const SCRIPTED_BRIDGE: &str = r#"#!/usr/bin/env python3
import json, sys
for line in sys.stdin:
    request = json.loads(line)
    method, params = request.get("method"), request.get("params") or {}
    if method == "open":
        result = {"ok": True, "protocol_version": 2, "backend": "scripted", "summary": "open"}
    elif method == "read":
        result = READ_RESULT
    elif method == "close":
        result = {"ok": True, "protocol_version": 2, "safe_state_confirmed": True,
                  "safe_state": {"controller": "stopped"}}
    else:
        result = {"ok": True}
    print(json.dumps({"id": request.get("id"), "result": result}), flush=True)
    if method == "close":
        break
"#;

/// A bus that never falls silent: every read answers as many frames as it asks for.
const FLOODING_READ: &str = r#"{"ok": True, "frames": [{"id": 256, "extended": False, "dlc": 1, "data_hex": "00"}] * max(1, int(params.get("max_frames") or 1))}"#;

/// A controller that fails every read.
const FAILING_READ: &str =
    r#"{"ok": False, "error_type": "can_read_failed", "summary": "The controller is bus-off."}"#;

/// `init`, and one process bus `solo` whose bridge answers each read with `read`.
fn bench_with_bridge(read: &str) -> World {
    let world = World::new();
    let (_, code) = world.run_json(&["init"]);
    assert_eq!(code, Some(0), "init succeeds");
    let bridge = world.write_fake_tool("bridge", &SCRIPTED_BRIDGE.replace("READ_RESULT", read));
    let path = world.config_path();
    let buses = format!(
        "can_buses:\n  solo:\n    adapter: process\n    channel: sim-solo\n    executable: \"{}\"\n\
         \x20   timeout_s: 2\n    permissions:\n      allow_write: true\n",
        bridge.display()
    );
    let text = std::fs::read_to_string(&path).expect("config");
    std::fs::write(&path, text.replacen("can_buses: {}", &buses, 1)).expect("the bus");
    world
}

#[test]
fn a_read_that_fails_while_a_start_clears_the_queue_is_refused_here_and_in_the_reference() {
    let world = bench_with_bridge(FAILING_READ);
    each_refused(
        &world,
        &[("can_session_start", json!({"bus_id": "solo"}))],
        "can_queue_clear_failed",
        |doc| {
            assert_eq!(doc["retry_safe"], true, "{doc}");
            assert_eq!(doc["frames_drained"], 0, "{doc}");
            assert_eq!(doc["cleanup_confirmed"], true, "{doc}");
        },
    );
}

#[test]
fn clearing_a_bus_that_never_falls_silent_is_the_drain_limit_here_and_in_the_reference() {
    let world = bench_with_bridge(FLOODING_READ);
    let start = |clear: bool| {
        (
            "can_session_start",
            json!({"bus_id": "solo", "clear_rx_queue": clear}),
        )
    };
    for program in programs() {
        let mut mcp = Mcp::start(&world, &program);
        let who = program.display().to_string();
        // A new session is closed again; one already open stays, and only its clear is refused.
        for (tool, args) in [start(true), start(false), start(true)] {
            let result = mcp.call(tool, &args);
            let doc = &result["structuredContent"];
            if args["clear_rx_queue"] == false {
                assert_eq!(result["isError"], false, "{who}: {doc}");
                continue;
            }
            assert_eq!(result["isError"], true, "{who}: {doc}");
            assert_eq!(doc["error_type"], "can_queue_clear_limit", "{who}: {doc}");
            assert!(
                doc["frames_drained"].as_u64() >= Some(16_384),
                "{who}: {doc}"
            );
            assert_eq!(doc["retry_safe"], false, "{who}: {doc}");
        }
        let stop = mcp.call("can_session_stop", &json!({"bus_id": "solo"}));
        assert_eq!(stop["isError"], false, "{who}: the session stayed: {stop}");
    }
}

// The tests that run a program as `nobody` are `#[ignore = "needs root"]`: only root can become
// another account. `scripts/test.sh` runs them with `--ignored` when it is root, as CI is, so a
// plain `cargo test` shows them as ignored instead of passing them unchecked.

/// Fails the test, rather than passing it unchecked, when it was asked for without root.
fn assert_root() {
    let id = std::process::Command::new("id").arg("-u").output();
    assert!(
        id.is_ok_and(|out| out.stdout == b"0\n"),
        "this test runs a program as nobody through setpriv, which needs root: run it as root"
    );
}

/// A world with a `uart0` port on an echo board, handed to `nobody`.
fn a_uart_bench_run_by_nobody() -> (support::raw::EchoBoard, World) {
    assert_root();
    let board = support::raw::EchoBoard::start();
    let world = World::new();
    support::raw::configure_uart(&world, &board.device);
    chown(
        "65534:65534",
        world.home.parent().expect("the world's root"),
    );
    (board, world)
}

/// Hands `path` (recursively) to `owner` (`uid:gid`).
fn chown(owner: &str, path: &std::path::Path) {
    let done = std::process::Command::new("chown")
        .args(["-R", owner])
        .arg(path)
        .status();
    assert!(
        done.is_ok_and(|s| s.success()),
        "chown {owner} {}",
        path.display()
    );
}

/// `program args --json` run by `nobody` in `world`: its exit code and document.
fn as_nobody(world: &World, program: &std::path::Path, args: &[&str]) -> (Option<i32>, Value) {
    let out = world
        .command_of(std::path::Path::new("setpriv"))
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(program)
        .args(args)
        .arg("--json")
        .output()
        .expect("the program runs as nobody");
    let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|err| {
        panic!(
            "one JSON document ({err}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code(), doc)
}

#[test]
#[ignore = "needs root"]
fn a_serial_node_this_account_may_not_open_is_device_access_denied_in_doctor_here_and_in_the_reference()
 {
    // The pty is its creator's alone (0600), so nobody may not open it.
    let (_board, world) = a_uart_bench_run_by_nobody();
    for program in programs() {
        let (code, doc) = as_nobody(&world, &program, &["doctor"]);
        let access = &doc["com_ports"]["uart0"]["device_access"];
        let who = program.display();
        assert_eq!(code, Some(1), "{who}: {doc}");
        assert_eq!(access["ok"], false, "{who}: {access}");
        assert_eq!(
            access["error_type"], "device_access_denied",
            "{who}: {access}"
        );
    }
}

#[test]
#[ignore = "needs root"]
fn a_detached_run_whose_runs_directory_refuses_writes_is_run_state_unwritable_here_and_in_the_reference()
 {
    let (_board, world) = a_uart_bench_run_by_nobody();
    let plan = world.write_plan(
        "p.yaml",
        "version: 5\nname: p\nsteps:\n\
         - {device: uart0, action: uart_open}\n- {device: uart0, action: uart_close}\n",
    );
    let runs = world
        .home
        .join(".local/state/agentic-hil/coordination/runs");
    std::fs::create_dir_all(&runs).expect("the runs directory");
    chown(
        "65534:65534",
        world.home.parent().expect("the world's root"),
    );
    // Everything is nobody's but the runs directory, which stays root's (0755).
    chown("0:0", &runs);
    for program in programs() {
        let args = ["test-reactor", "--test-config", &plan, "--detach"];
        let (code, doc) = as_nobody(&world, &program, &args);
        let who = program.display();
        assert_eq!(code, Some(1), "{who}: {doc}");
        assert_eq!(doc["error_type"], "run_state_unwritable", "{who}: {doc}");
        assert_eq!(doc["errno"], 13, "{who}: {doc}");
    }
}

#[test]
fn an_agent_settings_file_of_the_wrong_shape_is_left_alone_and_named_here_and_in_the_reference() {
    for broken in [
        "[]",
        "{\"permissions\": []}",
        "{\"permissions\": {\"deny\": 5}}",
        "{not json",
    ] {
        for program in programs() {
            let world = World::new();
            let settings = world.home.join(".claude/settings.json");
            std::fs::create_dir_all(settings.parent().expect("dir")).expect("the agent's dir");
            std::fs::write(&settings, broken).expect("the operator's file");
            let out = world
                .command_of(&program)
                .args(["init", "--agent", "claude-code", "--json"])
                .output()
                .expect("init runs");
            let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
            let step = &doc["steps"]["agent_write_restriction"];
            let who = format!("{} on {broken}", program.display());
            assert_eq!(out.status.code(), Some(1), "{who}: {doc}");
            assert_eq!(step["ok"], false, "{who}: {step}");
            assert_eq!(
                step["error_type"], "agent_permissions_unreadable",
                "{who}: {step}"
            );
            let now = std::fs::read_to_string(&settings).expect("still there");
            assert_eq!(now, broken, "{who}: the file is left exactly as it was");
        }
    }
}

#[test]
fn a_pcan_basic_channel_is_a_missing_adapter_library_here_and_in_the_reference() {
    let world = World::new();
    let (_, code) = world.run_json(&["init"]);
    assert_eq!(code, Some(0), "init succeeds");
    let path = world.config_path();
    let bus = "can_buses:\n  bus:\n    adapter: peak\n    channel: PCAN_USBBUS1\n    bitrate: 500000\n\
               \x20   permissions:\n      allow_write: true\n";
    let text = std::fs::read_to_string(&path).expect("config");
    std::fs::write(&path, text.replacen("can_buses: {}", bus, 1)).expect("the bus");
    each_refused(
        &world,
        &[("can_session_start", json!({"bus_id": "bus"}))],
        "can_adapter_library_missing",
        |doc| {
            assert_eq!(doc["retry_safe"], true, "{doc}");
            assert_eq!(doc["side_effect_status"], "not_started", "{doc}");
        },
    );
}

/// An `openocd` that opens the gdb port it is given and serves nothing on it: enough for a start to
/// reach gdb.
const PORT_ONLY_OPENOCD: &str = r#"#!/usr/bin/python3
import socket, sys, time
args = sys.argv[1:]
if args[:1] == ["--version"]:
    print("Open On-Chip Debugger 0.12.0")
    sys.exit(0)
script = [part.strip() for i, a in enumerate(args) if a == "-c" and i + 1 < len(args)
          for part in args[i + 1].split(";")]
port = next(int(c.split()[1]) for c in script if c.startswith("gdb_port "))
host = next((c.split()[1] for c in script if c.startswith("bindto ")), "127.0.0.1")
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind((host, port))
server.listen(1)
sys.stderr.write("Info : Listening on port %d for gdb connections\n" % port)
sys.stderr.flush()
time.sleep(60)
"#;

/// A GDB/MI that says no to asynchronous MI and yes to everything else.
const SYNC_ONLY_GDB: &str = r#"#!/usr/bin/python3
import sys
print("(gdb) ", flush=True)
for line in sys.stdin:
    line = line.strip()
    token = ""
    while line and line[0].isdigit():
        token, line = token + line[0], line[1:]
    if "mi-async" in line:
        print(token + '^error,msg="No symbol \\"mi\\" in current context."', flush=True)
    else:
        print(token + "^done", flush=True)
    print("(gdb) ", flush=True)
"#;

/// An OpenOCD bench whose gdb (`debug.gdb_executable`) is `gdb`, written with `mode`.
fn bench_with_gdb(gdb: &[u8], mode: u32) -> World {
    let world = bench_with_debugger(PORT_ONLY_OPENOCD.as_bytes(), 0o755);
    let path = world.home.join("tools/gdb");
    std::fs::write(&path, gdb).expect("the gdb");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    let config = world.config_path();
    let text = std::fs::read_to_string(&config).expect("config").replacen(
        "gdb_executable: null",
        &format!("gdb_executable: \"{}\"", path.display()),
        1,
    );
    std::fs::write(&config, text).expect("name the gdb");
    world
}

#[test]
fn a_gdb_that_will_not_start_after_the_server_did_is_gdb_start_failed_here_and_in_the_reference() {
    let world = bench_with_gdb(b"\x00\x01 not a program\n", 0o755);
    each_refused(
        &world,
        &[("debug_start_session", json!({"image_path": "fw/fw.elf"}))],
        "gdb_start_failed",
        |doc| {
            assert!(doc["backend_error"].is_string(), "{doc}");
        },
    );
}

#[test]
fn a_gdb_without_asynchronous_mi_is_gdb_async_unsupported_here_and_in_the_reference() {
    let world = bench_with_gdb(SYNC_ONLY_GDB.as_bytes(), 0o755);
    each_refused(
        &world,
        &[("debug_start_session", json!({"image_path": "fw/fw.elf"}))],
        "gdb_async_unsupported",
        |doc| {
            assert_eq!(
                doc["backend_error"], "No symbol \"mi\" in current context.",
                "{doc}"
            );
            assert_eq!(doc["target_contacted"], false, "{doc}");
        },
    );
}

/// An STM32_Programmer_CLI whose probe enumerates and refuses its USB link.
const USB_REFUSING_PROGRAMMER: &str = r#"#!/usr/bin/python3
import sys
if "--version" in sys.argv or "-version" in sys.argv:
    print("STM32CubeProgrammer version: 2.17.0")
    sys.exit(0)
print("      -------------------------------------------------------------------")
print("                        STM32CubeProgrammer v2.17.0")
print("      -------------------------------------------------------------------")
print("")
print("Error: ST-LINK error (DEV_USB_COMM_ERR)")
sys.exit(1)
"#;

#[test]
fn a_probe_whose_usb_link_refuses_the_programmer_is_adapter_usb_error_here_and_in_the_reference() {
    let world = World::new();
    let (_, code) = world.run_json(&["init"]);
    assert_eq!(code, Some(0), "init succeeds");
    let exe = world.write_fake_tool("STM32_Programmer_CLI", USB_REFUSING_PROGRAMMER);
    let config = format!(
        "workspace_root: \"{ws}\"\nstate_root: \"{state}\"\nversion: 3\n\
         target:\n  name: board\n  controller: stm32f405\n\
         debuggers:\n  probe:\n    type: stlink\n    executable: \"{exe}\"\n    \
         probe_id: 066DFF535254887767184038\n    \
         permissions:\n      allow_flash: true\n      allow_reset: true\n\
         artifacts:\n  allowed_roots: [fw]\n",
        ws = world.workspace.display(),
        state = world.home.join(".local/state/agentic-hil").display(),
        exe = exe.display(),
    );
    std::fs::write(world.config_path(), config).expect("the test config is written");
    let fw = world.workspace.join("fw");
    std::fs::create_dir_all(&fw).expect("fw dir");
    std::fs::copy(support::firmware_image(), fw.join("fw.elf")).expect("firmware copies");
    each_refused(&world, &debugger_tools()[1..], "adapter_usb_error", |doc| {
        assert_eq!(doc["backend_error_type"], "adapter_usb_error", "{doc}");
    });
}
