//! A debug session through a gdb server whose executable is `ahil-sim`'s shim (OpenOCD's or
//! ST-LINK_gdbserver's arguments, gdb served on the port it is given, relayed to a real emulated
//! board started with `agentic-hil sim start` under a `type: qemu` entry): the world, the board, and
//! the checks both backends' tests make.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Client, World, call, ok};

/// Installs the server's fakes in `tools` and returns its `debuggers` entry (without grants).
fn install(server: Server, fakes: &Path, tools: &Path, timeout_s: u32) -> String {
    let copy = |from: &str, to: &str| {
        let path = tools.join(to);
        std::fs::copy(fakes.join(from), &path).expect("a fake is installed");
        path
    };
    match server {
        Server::OpenOcd => {
            let shim = copy("openocd_gdb_shim.py", "openocd.py");
            format!(
                "  ocd:\n    type: openocd\n    executable: \"{exe}\"\n    \
                 probe_id: SIM0\n    timeout_s: {timeout_s}\n",
                exe = shim.display(),
            )
        }
        Server::Stlink => {
            let shim = copy("stlink_gdb_shim.py", "ST-LINK_gdbserver.py");
            copy("openocd_gdb_shim.py", "openocd_gdb_shim.py");
            let cli = copy("probe_cli.py", "STM32_Programmer_CLI.py");
            format!(
                "  st:\n    type: stlink\n    executable: \"{cli}\"\n    \
                 gdb_server_executable: \"{exe}\"\n    \
                 probe_id: SIM0\n    timeout_s: {timeout_s}\n",
                cli = cli.display(),
                exe = shim.display(),
            )
        }
    }
}

pub const GRANTS: &str = "    permissions:\n      allow_flash: true\n      allow_reset: true\n      allow_debug_execution: true\n";

/// Which debug server the shim stands in for.
#[derive(Debug, Clone, Copy)]
pub enum Server {
    /// `type: openocd`: the shim is the `openocd` executable.
    OpenOcd,
    /// `type: stlink`: the shim is `gdb_server_executable`, beside the programmer CLI fake.
    Stlink,
}

impl Server {
    /// The server's name, as an assertion names it.
    fn name(self) -> &'static str {
        match self {
            Self::OpenOcd => "OpenOCD",
            Self::Stlink => "ST-LINK_gdbserver",
        }
    }
}

/// A test world whose debugger's gdb server is `ahil-sim`'s shim, relaying to an emulated board.
pub struct Bench {
    pub world: World,
    server: Server,
    pub tools: PathBuf,
    pub board_dir: PathBuf,
    qemu_config: String,
    server_config: String,
}

impl Bench {
    pub fn new(server: Server, scenario: &str, timeout_s: u32) -> Self {
        let world = World::new();
        let (_, code) = world.run_json(&["init"]);
        assert_eq!(code, Some(0), "init succeeds");
        let state = world.home.join(".local/state/agentic-hil");
        let tools = super::fakes::tools(&world);
        let entry = install(server, &super::fakes::fakes_dir(), &tools, timeout_s);
        super::fakes::play(&tools, scenario);
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
        let server_config = format!("{head}debuggers:\n{entry}{GRANTS}{tail}");
        super::sim_board::copy_firmware_as(&world, &[("ahil-fw-v1.elf", "fw.elf")]);
        std::fs::write(world.config_path(), &server_config).expect("config");
        Self {
            world,
            server,
            tools,
            board_dir,
            qemu_config,
            server_config,
        }
    }

    /// Starts the emulated board under the `type: qemu` entry, then hands the config to the server.
    pub fn start_board(&self) -> Board<'_> {
        std::fs::write(self.world.config_path(), &self.qemu_config).expect("config");
        let (doc, code) = self
            .world
            .run_json(&["sim", "start", "--image", "fw/fw.elf"]);
        let board = Board(self);
        assert_eq!(code, Some(0), "sim start: {doc}");
        std::fs::write(self.world.config_path(), &self.server_config).expect("config");
        board
    }

    /// Boots the board (running), connects, and starts a session on `fw/fw.elf` with `args` beside
    /// the image (`{"mode": ...}`, or `{}` for an attach): the board, the client and the start's
    /// answer.
    pub async fn session(&self, args: Value) -> (Board<'_>, Client, Value) {
        let board = self.start_board();
        assert_eq!(board.vm_status(), "running", "the board boots running");
        let client = super::connect(&self.world).await;
        let doc = ok(&client, "debug_start_session", start_args(args)).await;
        (board, client, doc)
    }

    /// A session start as [`Bench::session`] makes it, which must be refused: its answer.
    pub async fn refused_start(&self, client: &Client, args: Value) -> Value {
        let (doc, is_error) = call(client, "debug_start_session", start_args(args)).await;
        assert!(is_error, "{doc}");
        doc
    }

    /// After refused starts: gdb never started, and no session stands.
    pub async fn assert_nothing_started(&self, client: &Client) {
        assert_eq!(gdbs_under(&self.world.home), 0, "gdb never started");
        let doc = ok(client, "debug_get_session_status", json!({})).await;
        assert_eq!(doc["active"], false, "{doc}");
    }

    /// The server killed (SIGKILL, so none of its cleanup runs) in the middle of a session: the
    /// keepers end gdb and the gdb server, and the core stays halted.
    pub fn kill_the_server_mid_session(&self) {
        let board = self.start_board();
        let mut server = super::raw::Mcp::ours(&self.world);
        let started = server.call("debug_start_session", &json!({"image_path": "fw/fw.elf"}));
        assert_eq!(started["isError"], false, "{started}");
        let name = self.server.name();
        let pid = self.shim_pid();
        assert!(alive(pid), "the session runs {name}");
        assert_eq!(gdbs_under(&self.world.home), 1, "the session runs gdb");
        server.kill9();
        assert!(gone(pid), "{name} ended with the server");
        let deadline = Instant::now() + Duration::from_secs(5);
        while gdbs_under(&self.world.home) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(gdbs_under(&self.world.home), 0, "gdb ended with the server");
        std::thread::sleep(Duration::from_millis(300));
        assert_ne!(board.vm_status(), "running", "the core stays halted");
    }

    /// Stops the session: the halt is confirmed, the server and gdb end with it, and the core stays
    /// halted. The stop's answer.
    pub async fn stop_with_the_core_halted(&self, client: &Client, board: &Board<'_>) -> Value {
        let doc = ok(client, "debug_stop_session", json!({})).await;
        assert_eq!(doc["halt_confirmed"], true, "{doc}");
        assert!(
            gone(self.shim_pid()),
            "{} ended with the session",
            self.server.name()
        );
        std::thread::sleep(Duration::from_millis(300));
        assert_ne!(board.vm_status(), "running", "the board stays halted");
        assert_eq!(gdbs_under(&self.world.home), 0, "no gdb is left");
        doc
    }

    pub fn calls(&self) -> Vec<Vec<String>> {
        super::fakes::calls(&self.tools)
    }

    /// The monitor commands gdb sent through the shim, in order.
    pub fn monitor(&self) -> Vec<String> {
        std::fs::read_to_string(self.tools.join("monitor.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    pub fn shim_pid(&self) -> i32 {
        std::fs::read_to_string(self.tools.join("shim.pid"))
            .expect("the shim ran")
            .trim()
            .parse()
            .expect("a pid")
    }
}

/// `debug_start_session`'s arguments: `fw/fw.elf`, with `args` (an object) beside it.
fn start_args(args: Value) -> Value {
    let mut start = json!({"image_path": "fw/fw.elf"});
    if let (Some(start), Value::Object(args)) = (start.as_object_mut(), args) {
        start.extend(args);
    }
    start
}

/// A running board; stopped when dropped, whatever the test did.
pub struct Board<'a>(&'a Bench);

impl Board<'_> {
    /// QMP's run state, read from the board's own socket (the server's config names no qemu entry).
    pub fn vm_status(&self) -> String {
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

pub fn alive(pid: i32) -> bool {
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
pub fn gone(pid: i32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    !alive(pid)
}

/// How many gdb processes run under this test's HOME.
pub fn gdbs_under(home: &Path) -> usize {
    super::processes::gdbs_under(home).len()
}

pub async fn counter(client: &Client) -> u64 {
    let value = ok(client, "debug_symbol_value", json!({"symbol": "counter"})).await;
    assert_eq!(value["size_bytes"], 4, "{value}");
    value["value_unsigned"].as_u64().expect("a reading")
}

/// In an open session: a reset is `resource_busy`, and two stops at `on_tick` show the counter
/// growing between them.
pub async fn reset_is_busy_and_on_tick_breaks_twice(client: &Client) {
    let (doc, is_error) = call(client, "reset_target", json!({"mode": "halt"})).await;
    assert!(is_error, "reset during a session: {doc}");
    assert_eq!(doc["error_type"], "resource_busy", "{doc}");

    ok(
        client,
        "debug_set_breakpoint",
        json!({"location": "on_tick"}),
    )
    .await;
    let mut seen = Vec::new();
    for _ in 0..2 {
        let doc = ok(client, "debug_continue", json!({"timeout_s": 5})).await;
        assert_eq!(doc["stop_reason"], "breakpoint_hit", "{doc}");
        assert_eq!(doc["stop"]["frame"]["function"], "on_tick", "{doc}");
        seen.push(counter(client).await);
    }
    assert!(
        seen[1] > seen[0],
        "the counter grows between hits: {seen:?}"
    );
}
