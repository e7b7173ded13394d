//! Black-box, end to end: debug sessions on a `type: stlink` debugger through ST-LINK_gdbserver
//! (`gdb_server_executable`), with real gdb. The server is `ahil-sim`'s ST-LINK shim: it takes the
//! server's arguments, serves gdb on the `-p` port and relays to a real emulated board (started with
//! `agentic-hil sim start` under a `type: qemu` entry), answering the server's monitor commands itself.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use serde_json::{Value, json};
use support::World;

type Client = RunningService<rmcp::RoleClient, ()>;

const GRANTS: &str = "    permissions:\n      allow_flash: true\n      allow_reset: true\n      allow_debug_execution: true\n";

struct Bench {
    world: World,
    tools: PathBuf,
    board_dir: PathBuf,
    qemu_config: String,
    stlink_config: String,
}

impl Bench {
    fn new(scenario: &str, timeout_s: u32) -> Self {
        let world = World::new();
        let (_, code) = world.run_json(&["init"]);
        assert_eq!(code, Some(0), "init succeeds");
        let state = world.home.join(".local/state/agentic-hil");
        let tools = world.home.join("tools");
        std::fs::create_dir_all(&tools).expect("tools dir");
        let fakes = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../ahil-sim/src/fakes");
        let shim = tools.join("ST-LINK_gdbserver.py");
        std::fs::copy(fakes.join("stlink_gdb_shim.py"), &shim).expect("the shim is installed");
        std::fs::copy(
            fakes.join("openocd_gdb_shim.py"),
            tools.join("openocd_gdb_shim.py"),
        )
        .expect("the relay is installed");
        let cli = tools.join("STM32_Programmer_CLI.py");
        std::fs::copy(fakes.join("probe_cli.py"), &cli).expect("the CLI fake is installed");
        std::fs::write(tools.join("fake-scenario"), scenario).expect("scenario");
        let board_dir = state.join("sim").join("board");
        std::fs::write(tools.join("board-dir"), board_dir.display().to_string())
            .expect("board dir");
        let head = format!(
            "workspace_root: \"{ws}\"\nstate_root: \"{state}\"\nversion: 3\n\
             target:\n  name: board\n  controller: stm32f405\n",
            ws = world.workspace.display(),
            state = state.display(),
        );
        let tail = "artifacts:\n  allowed_roots: [fw]\n\
                    debug:\n  allowed_symbols: [on_tick, counter]\n";
        let qemu_config = format!(
            "{head}debuggers:\n  board:\n    type: qemu\n    timeout_s: 10\n{GRANTS}{tail}"
        );
        let stlink_config = format!(
            "{head}debuggers:\n  st:\n    type: stlink\n    executable: \"{cli}\"\n    \
             gdb_server_executable: \"{exe}\"\n    \
             probe_id: SIM0\n    timeout_s: {timeout_s}\n{GRANTS}{tail}",
            cli = cli.display(),
            exe = shim.display(),
        );
        let fw = world.workspace.join("fw");
        std::fs::create_dir_all(&fw).expect("fw dir");
        std::fs::copy(
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../firmware/build/ahil-fw-v1.elf"),
            fw.join("fw.elf"),
        )
        .expect("firmware copies");
        std::fs::write(world.config_path(), &stlink_config).expect("config");
        Self {
            world,
            tools,
            board_dir,
            qemu_config,
            stlink_config,
        }
    }

    /// Starts the emulated board under the `type: qemu` entry, then hands the config to ST-Link.
    fn start_board(&self) -> Board<'_> {
        std::fs::write(self.world.config_path(), &self.qemu_config).expect("config");
        let (doc, code) = self
            .world
            .run_json(&["sim", "start", "--image", "fw/fw.elf"]);
        let board = Board(self);
        assert_eq!(code, Some(0), "sim start: {doc}");
        std::fs::write(self.world.config_path(), &self.stlink_config).expect("config");
        board
    }

    fn calls(&self) -> Vec<Vec<String>> {
        std::fs::read_to_string(self.tools.join("calls.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).expect("call line"))
            .collect()
    }

    /// The monitor commands gdb sent through the shim, in order.
    fn monitor(&self) -> Vec<String> {
        std::fs::read_to_string(self.tools.join("monitor.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn shim_pid(&self) -> i32 {
        std::fs::read_to_string(self.tools.join("shim.pid"))
            .expect("the shim ran")
            .trim()
            .parse()
            .expect("a pid")
    }
}

/// A running board; stopped when dropped, whatever the test did.
struct Board<'a>(&'a Bench);

impl Board<'_> {
    /// QMP's run state, read from the board's own socket (the server's config names no qemu entry).
    fn vm_status(&self) -> String {
        let mut stream =
            UnixStream::connect(self.0.board_dir.join("qmp.sock")).expect("the board's QMP");
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let mut reader = BufReader::new(stream.try_clone().expect("clone"));
        let mut line = String::new();
        reader.read_line(&mut line).expect("greeting");
        for command in ["qmp_capabilities", "query-status"] {
            writeln!(stream, "{}", json!({"execute": command})).expect("request");
            loop {
                line.clear();
                reader.read_line(&mut line).expect("answer");
                let doc: Value = serde_json::from_str(&line).expect("QMP JSON");
                if let Some(answer) = doc.get("return") {
                    if command == "query-status" {
                        return answer["status"].as_str().expect("a status").to_owned();
                    }
                    break;
                }
            }
        }
        unreachable!("query-status answered")
    }
}

impl Drop for Board<'_> {
    fn drop(&mut self) {
        let _ = std::fs::write(self.0.world.config_path(), &self.0.qemu_config);
        let _ = self.0.world.run(&["sim", "stop"]);
    }
}

async fn call(client: &Client, tool: &str, args: Value) -> (Value, bool) {
    let mut request = CallToolRequestParams::new(tool.to_owned());
    if let Value::Object(map) = args {
        request = request.with_arguments(map);
    }
    let result = client.call_tool(request).await.expect("tools/call answers");
    let doc = result
        .structured_content
        .expect("the envelope is structured content");
    (doc, result.is_error == Some(true))
}

async fn ok(client: &Client, tool: &str, args: Value) -> Value {
    let (doc, is_error) = call(client, tool, args).await;
    assert!(!is_error, "{tool}: {doc}");
    doc
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or_default()
            .trim_start()
            .starts_with('Z')
    })
}

/// Waits up to 5 s for `pid` to be gone.
fn gone(pid: i32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    !alive(pid)
}

/// gdb processes started under this test's HOME.
fn gdbs_under(home: &Path) -> usize {
    let wanted = format!("HOME={}", home.display());
    std::fs::read_dir("/proc").map_or(0, |entries| {
        entries
            .filter_map(Result::ok)
            .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
                String::from_utf8_lossy(&cmdline).contains("--interpreter=mi")
                    && environ
                        .split(|b| *b == 0)
                        .any(|var| var == wanted.as_bytes())
            })
            .count()
    })
}

async fn counter(client: &Client) -> u64 {
    let value = ok(client, "debug_symbol_value", json!({"symbol": "counter"})).await;
    assert_eq!(value["size_bytes"], 4, "{value}");
    value["value_unsigned"].as_u64().expect("a reading")
}

#[tokio::test]
async fn an_stlink_session_breaks_on_on_tick_reads_a_growing_counter_and_stops_with_the_board_halted()
 {
    let bench = Bench::new("ok", 10);
    let board = bench.start_board();
    assert_eq!(board.vm_status(), "running", "the board boots running");
    let client = support::connect(&bench.world).await;

    let doc = ok(
        &client,
        "debug_start_session",
        json!({"image_path": "fw/fw.elf"}),
    )
    .await;
    assert_eq!(doc["backend"], "stlink", "{doc}");
    assert_eq!(doc["session"]["status"], "halted", "{doc}");
    assert_eq!(doc["session"]["backend"], "stlink", "{doc}");
    let port = doc["session"]["gdb_port"].as_u64().expect("a gdb port");
    assert_ne!(board.vm_status(), "running", "an attach halts the core");
    let argv = bench.calls().pop().expect("the server was run");
    let tools = bench.tools.display().to_string();
    assert_eq!(
        argv,
        [
            "-p",
            &port.to_string(),
            "-e",
            "-d",
            "-cp",
            &tools,
            "-i",
            "SIM0",
            "-g"
        ],
        "the server serves the reserved port for this probe, beside the programmer"
    );

    let (doc, is_error) = call(&client, "reset_target", json!({"mode": "halt"})).await;
    assert!(is_error, "reset during a session: {doc}");
    assert_eq!(doc["error_type"], "resource_busy", "{doc}");

    ok(
        &client,
        "debug_set_breakpoint",
        json!({"location": "on_tick"}),
    )
    .await;
    let mut seen = Vec::new();
    for _ in 0..2 {
        let doc = ok(&client, "debug_continue", json!({"timeout_s": 5})).await;
        assert_eq!(doc["stop_reason"], "breakpoint_hit", "{doc}");
        assert_eq!(doc["stop"]["frame"]["function"], "on_tick", "{doc}");
        seen.push(counter(&client).await);
    }
    assert!(
        seen[1] > seen[0],
        "the counter grows between hits: {seen:?}"
    );
    assert!(bench.monitor().is_empty(), "an attach resets nothing");

    let doc = ok(&client, "debug_stop_session", json!({})).await;
    assert_eq!(doc["halt_confirmed"], true, "{doc}");
    assert_eq!(
        doc["halt_confirmed_by"], "server_killed_while_halted",
        "{doc}"
    );
    assert_eq!(doc["session"]["backend"], "stlink", "{doc}");
    assert!(
        gone(bench.shim_pid()),
        "ST-LINK_gdbserver ended with the session"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_ne!(board.vm_status(), "running", "the board stays halted");
    assert_eq!(gdbs_under(&bench.world.home), 0, "no gdb is left");
    let log_path = doc["log_path"]
        .as_str()
        .expect("the stop names the session log");
    let log = std::fs::read_to_string(bench.world.workspace.join(log_path))
        .expect("the session log is in the workspace");
    for wanted in [
        "\"server_started\"",
        "\"stop\"",
        "Waiting for debugger connection",
    ] {
        assert!(log.contains(wanted), "{wanted} in the session log: {log}");
    }
    let doc = ok(&client, "debug_get_session_status", json!({})).await;
    assert_eq!(doc["active"], false, "{doc}");
    // Outside a session the symbol reads go back to the offline path, which needs a flashed ELF.
    let (doc, _) = call(&client, "debug_symbol_value", json!({"symbol": "counter"})).await;
    assert_eq!(doc["error_type"], "symbol_source_not_available", "{doc}");
    drop(client);
}

#[tokio::test]
async fn a_reset_halt_session_resets_through_the_servers_monitor_and_runs_to_the_tick_breakpoint() {
    let bench = Bench::new("ok", 10);
    let board = bench.start_board();
    let client = support::connect(&bench.world).await;
    let doc = ok(
        &client,
        "debug_start_session",
        json!({"image_path": "fw/fw.elf", "mode": "reset_halt"}),
    )
    .await;
    assert_eq!(
        doc["session"]["load_phase"], "pre_load_reset_confirmed",
        "{doc}"
    );
    assert_eq!(
        bench.monitor(),
        ["reset", "halt"],
        "gdb reset the core through ST-LINK_gdbserver"
    );
    assert_ne!(board.vm_status(), "running", "reset into halt");
    ok(
        &client,
        "debug_set_breakpoint",
        json!({"location": "on_tick"}),
    )
    .await;
    let doc = ok(&client, "debug_continue", json!({"timeout_s": 5})).await;
    assert_eq!(doc["stop_reason"], "breakpoint_hit", "{doc}");
    let doc = ok(&client, "debug_stop_session", json!({})).await;
    assert_eq!(doc["halt_confirmed"], true, "{doc}");
    assert!(
        gone(bench.shim_pid()),
        "ST-LINK_gdbserver ended with the session"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_ne!(board.vm_status(), "running", "the board stays halted");
    drop(client);
}

#[tokio::test]
async fn a_server_that_finds_no_stlink_fails_the_start_with_its_words_and_leaves_nothing() {
    let bench = Bench::new("exit-early", 10);
    let client = support::connect(&bench.world).await;
    for _ in 0..2 {
        let (doc, is_error) = call(
            &client,
            "debug_start_session",
            json!({"image_path": "fw/fw.elf"}),
        )
        .await;
        assert!(is_error, "{doc}");
        assert_eq!(doc["error_type"], "adapter_not_found", "{doc}");
        assert_eq!(doc["backend"], "stlink", "{doc}");
        assert_eq!(doc["backend_error_type"], "probe_not_found", "{doc}");
        assert_eq!(doc["side_effect_status"], "not_started", "{doc}");
        assert!(
            doc["server_output_tail"]
                .as_array()
                .is_some_and(|lines| lines.iter().any(|l| l
                    .as_str()
                    .is_some_and(|l| l.contains("No ST-LINK detected")))),
            "{doc}"
        );
        assert!(!alive(bench.shim_pid()), "the server is gone");
    }
    assert_eq!(gdbs_under(&bench.world.home), 0, "gdb never started");
    let doc = ok(&client, "debug_get_session_status", json!({})).await;
    assert_eq!(doc["active"], false, "{doc}");
    drop(client);
}

#[tokio::test]
async fn a_server_that_never_opens_its_port_is_probe_server_open_failed_and_is_killed() {
    let bench = Bench::new("no-port", 1);
    let client = support::connect(&bench.world).await;
    let (doc, is_error) = call(
        &client,
        "debug_start_session",
        json!({"image_path": "fw/fw.elf"}),
    )
    .await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], "probe_server_open_failed", "{doc}");
    assert_eq!(doc["backend_error_type"], "gdb_server_not_ready", "{doc}");
    assert_eq!(doc["backend"], "stlink", "{doc}");
    assert!(gone(bench.shim_pid()), "the server was killed");
    assert_eq!(gdbs_under(&bench.world.home), 0, "gdb never started");
    let doc = ok(&client, "debug_get_session_status", json!({})).await;
    assert_eq!(doc["active"], false, "{doc}");
    drop(client);
}

#[test]
fn a_server_killed_mid_session_takes_gdb_and_the_stlink_server_with_it_and_leaves_the_core_halted()
{
    let bench = Bench::new("ok", 10);
    let board = bench.start_board();
    let mut server = bench
        .world
        .command()
        .arg("mcp-stdio")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("server starts");
    let mut stdin = server.stdin.take().expect("stdin");
    for line in [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"debug_start_session","arguments":{"image_path":"fw/fw.elf"}}}"#,
    ] {
        writeln!(stdin, "{line}").expect("send");
    }
    stdin.flush().expect("flush");
    let mut reader = BufReader::new(server.stdout.take().expect("stdout"));
    loop {
        let mut line = String::new();
        assert!(
            reader.read_line(&mut line).expect("read") > 0,
            "server answered"
        );
        let msg: Value = serde_json::from_str(&line).expect("JSON-RPC");
        if msg["id"] == 2 {
            assert_eq!(msg["result"]["isError"], false, "{msg}");
            break;
        }
    }
    let stlink = bench.shim_pid();
    assert!(alive(stlink), "the session runs ST-LINK_gdbserver");
    server.kill().expect("SIGKILL the server");
    server.wait().expect("reaped");
    drop(stdin);
    assert!(gone(stlink), "ST-LINK_gdbserver ended with the server");
    let deadline = Instant::now() + Duration::from_secs(5);
    while gdbs_under(&bench.world.home) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        gdbs_under(&bench.world.home),
        0,
        "gdb ended with the server"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_ne!(board.vm_status(), "running", "the core stays halted");
}
