//! A bare JSON-RPC client over a server's stdin/stdout, for tests that need the server's pid (to
//! kill it) or many servers at once, or another program (the reference) behind the same calls.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

use super::World;

pub struct Mcp {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next: u64,
    /// Our own server: its results are checked against the outputSchemas it publishes (the
    /// reference publishes none).
    ours: bool,
}

impl Mcp {
    /// `program mcp-stdio` in `world`, initialized.
    pub fn start(world: &World, program: &std::path::Path) -> Self {
        Self::start_in(world, program, &world.workspace)
    }

    /// `program mcp-stdio` with `world`'s HOME run in another `workspace` (another project on the
    /// same bench), initialized.
    pub fn start_in(world: &World, program: &std::path::Path, workspace: &std::path::Path) -> Self {
        let mut cmd = Command::new(program);
        world.scrub(&mut cmd);
        let mut child = spawn_stdio(cmd.current_dir(workspace));
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut mcp = Self {
            child,
            stdin: Some(stdin),
            stdout,
            next: 0,
            ours: program == std::path::Path::new(World::binary()),
        };
        mcp.request(
            "initialize",
            &json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        );
        mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        mcp
    }

    /// This program's server.
    pub fn ours(world: &World) -> Self {
        Self::start(world, std::path::Path::new(World::binary()))
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL, and wait until the kernel has reaped it (its locks are gone then).
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Ends stdin (the host went away) and waits for the server to exit; its exit code.
    pub fn close(&mut self) -> Option<i32> {
        drop(self.stdin.take());
        self.child.wait().ok().and_then(|s| s.code())
    }

    /// SIGTERM, and waits for the server to exit; its exit code.
    pub fn terminate(&mut self) -> Option<i32> {
        let pid = self.pid().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status();
        assert!(sent.is_ok_and(|s| s.success()), "SIGTERM is sent");
        self.child.wait().ok().and_then(|s| s.code())
    }

    pub fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin
            .write_all(format!("{message}\n").as_bytes())
            .expect("send");
        stdin.flush().expect("flush");
    }

    pub fn request(&mut self, method: &str, params: &Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            self.stdout.read_line(&mut line).expect("answer");
            assert!(!line.is_empty(), "the server closed its stdout");
            let doc: Value = serde_json::from_str(&line).expect("JSON-RPC");
            if doc["id"] == id {
                if self.ours
                    && method == "tools/call"
                    && let Some(tool) = params["name"].as_str()
                    && let Some(result) = doc["result"].get("structuredContent")
                {
                    super::check_result(tool, result);
                }
                return doc["result"].clone();
            }
        }
    }

    /// The next message the server writes (an answer or a notification).
    pub fn next_message(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("a message");
        assert!(!line.is_empty(), "the server closed its stdout");
        serde_json::from_str(&line).expect("JSON-RPC")
    }

    /// The answer to a request this test sent itself with `id` (other lines are skipped).
    pub fn answer_to(&mut self, id: i64) -> Value {
        loop {
            let mut line = String::new();
            self.stdout.read_line(&mut line).expect("answer");
            assert!(!line.is_empty(), "the server closed its stdout");
            let doc: Value = serde_json::from_str(&line).expect("JSON-RPC");
            if doc["id"] == id {
                return doc;
            }
        }
    }

    /// The whole `tools/call` result (`isError`, `structuredContent`, …).
    pub fn call(&mut self, tool: &str, args: &Value) -> Value {
        self.request("tools/call", &json!({"name": tool, "arguments": args}))
    }

    /// Just the envelope of a `tools/call`.
    pub fn envelope(&mut self, tool: &str, args: &Value) -> Value {
        self.call(tool, args)["structuredContent"].clone()
    }
}

/// `cmd mcp-stdio` spawned for a bare client: stdin and stdout piped, stderr dropped.
pub fn spawn_stdio(cmd: &mut Command) -> Child {
    cmd.arg("mcp-stdio")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("mcp-stdio starts")
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Echoes what it receives in upper case for 60 s; prints the device path first.
const ECHO_BOARD: &str = r"
import os, select, sys, time, tty
m, s = os.openpty()
tty.setraw(m); tty.setraw(s)
print(os.ttyname(s), flush=True)
os.close(s)
end = time.time() + 60
while time.time() < end:
    r, _, _ = select.select([m], [], [], 0.1)
    if not r:
        continue
    try:
        data = os.read(m, 4096)
    except OSError:
        time.sleep(0.02)
        continue
    os.write(m, data.upper())
";

/// A pty whose far end echoes in upper case (python's pty module, so no driver is named here).
pub struct EchoBoard {
    child: Child,
    pub device: String,
}

impl EchoBoard {
    pub fn start() -> Self {
        let (child, device) = pty_board(ECHO_BOARD, &[]);
        Self { child, device }
    }
}

impl Drop for EchoBoard {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `init`, then a `uart0` port on `device` with writes allowed.
pub fn configure_uart(world: &World, device: &str) {
    let out = world.run(&["init"]);
    assert!(
        out.status.success(),
        "init: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = world.config_path();
    let text = std::fs::read_to_string(&path).expect("config");
    let ports = format!(
        "com_ports:\n  uart0:\n    device: \"{device}\"\n    identity_source: device\n    permissions:\n      allow_write: true\n"
    );
    std::fs::write(&path, text.replacen("com_ports: {}", &ports, 1)).expect("write config");
}

/// Prints its pty's device, then boots each time `argv[1]` gains a line: prints its boot text if
/// the port is open (bytes nobody holds the port for are lost, as on a real UART) and notes the boot
/// in `argv[2]`, which the fake waits for.
const BOOT_BOARD: &str = r#"
import errno, os, select, sys, time, tty
m, s = os.openpty()
tty.setraw(m); tty.setraw(s)
open(sys.argv[2], "w").close()
print(os.ttyname(s), flush=True)
os.close(s)

def listened():
    # With every slave descriptor closed the master reads EIO at once; an open port blocks.
    r, _, _ = select.select([m], [], [], 0)
    if not r:
        return True
    try:
        os.read(m, 4096)
        return True
    except OSError as e:
        return e.errno != errno.EIO

seen = 0
end = time.time() + 120
while time.time() < end:
    try:
        with open(sys.argv[1], encoding="utf-8") as f:
            count = len(f.readlines())
    except FileNotFoundError:
        count = 0
    if count > seen:
        seen = count
        heard = listened()
        if heard:
            os.write(m, b"\r\nrom: boot\r\nboot ok v1\r\nready\r\n")
        with open(sys.argv[2], "a", encoding="utf-8") as f:
            f.write("printed\n" if heard else "dropped\n")
    time.sleep(0.02)
"#;

/// The board behind a capture port (`flash_firmware` with `capture`).
pub struct BootBoard {
    child: Child,
    pub device: String,
}

impl BootBoard {
    pub fn start(resets: &Path, booted: &Path) -> Self {
        let (child, device) = pty_board(BOOT_BOARD, &[resets, booted]);
        Self { child, device }
    }
}

/// Runs a python pty board and reads the device path it prints first.
fn pty_board(script: &str, args: &[&Path]) -> (Child, String) {
    let mut child = Command::new("python3")
        .args(["-c", script])
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().expect("stdout"))
        .read_line(&mut line)
        .expect("the board names its device");
    (child, line.trim().to_owned())
}

impl Drop for BootBoard {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
