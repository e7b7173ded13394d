//! The session lifecycle with a failure at each step of a start, for each session kind: COM (a pty)
//! and CAN (a scripted bridge, a child process) at every step; RTT and debug at every step too, the
//! steps up to the open with no target (debug through an OpenOCD that cannot start) and the
//! registration and a call given up while the device opened on two emulated boards; a CAN
//! participant (a broker that cannot be reached) at the steps before and at its open only, since its
//! device opens only with a broker, which is this program run again (`can-broker`), not a test
//! binary. Afterwards the
//! device lock is free, no session is registered, the device opens again, no child of the test
//! remains, and every session log that saw a start also saw how it ended.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ahil_drivers::process::CancelFlag;
use ahil_drivers::serial::{OpenOptions, Port, PtyPeer};
use serde_json::Value;

use super::{Acted, can_participant, can_session, com_session, debug, debug_ops, rtt_session};
use crate::audit::Audit;
use crate::ownership::{Ownership, SessionLocks};
use crate::session_lifecycle;
use crate::testkit::Fixture;

/// The step of a start that fails.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Step {
    /// Another holder has the device lock.
    Lock,
    /// The session log cannot be written.
    Log,
    /// The device does not open.
    Open,
    /// Another session took the id between the lock and the registration.
    Register,
    /// The call was given up (the client's cancel, the gate's deadline) while the device opened.
    Cancel,
}

const STEPS: [Step; 5] = [
    Step::Lock,
    Step::Log,
    Step::Open,
    Step::Register,
    Step::Cancel,
];

/// Which device a start opens.
#[derive(Clone, Copy)]
enum Device {
    /// The one the failing start is for.
    UnderTest,
    /// A second device, whose session takes the id first.
    Other,
    /// The first device's locks, but a device that cannot open.
    Absent,
}

impl Device {
    /// Which of the two devices' `under_test` and `other` this one is named by (an absent device
    /// has the first one's locks).
    fn pick<'a, T: ?Sized>(self, under_test: &'a T, other: &'a T) -> &'a T {
        match self {
            Device::Other => other,
            Device::UnderTest | Device::Absent => under_test,
        }
    }
}

struct World {
    fixture: Fixture,
    audit: Audit,
    ours: Arc<Ownership>,
    theirs: Arc<Ownership>,
    /// The start call's cancel flag.
    cancel: CancelFlag,
}

impl World {
    fn new() -> Self {
        let fixture = Fixture::new();
        fixture.write_config(&fixture.starter());
        let audit = Audit::for_config(&fixture.load());
        Self {
            ours: Arc::new(Ownership::under_home(&fixture.home, "mcp")),
            theirs: Arc::new(Ownership::under_home(&fixture.home, "mcp")),
            audit,
            fixture,
            cancel: CancelFlag::default(),
        }
    }

    /// What our server's starts use of its gate, with `sessions` as their table.
    fn host<S>(&self, sessions: &Arc<S>) -> session_lifecycle::Host<S> {
        session_lifecycle::Host::new(self.audit.clone(), &self.ours, sessions)
    }

    /// Runs `kind`'s start as our server would.
    fn start(&self, kind: impl session_lifecycle::SessionKind) -> Acted {
        session_lifecycle::start(kind, &self.host(&Arc::new(())), &self.cancel)
    }

    /// A file where the workspace's logs directory goes: no session log can be mirrored.
    fn block_logs(&self) {
        let mirror = self
            .fixture
            .workspace
            .join(self.audit.log_path("any.jsonl"));
        let dir = mirror.parent().expect("a log has a directory");
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir.parent().expect("the logs dir has a parent")).expect("dirs");
        std::fs::write(dir, b"not a directory").expect("block the logs directory");
    }

    /// Every session log line file (canonical copies in HOME, mirrors in the workspace).
    fn session_logs(&self) -> Vec<PathBuf> {
        [&self.fixture.home, &self.fixture.workspace]
            .into_iter()
            .flat_map(|root| ahil_core::testkit::files_under(root, &is_session_log))
            .collect()
    }
}

/// A session log: `com-`, `can-`, `gdb-` or `rtt-`, a `.jsonl` file.
fn is_session_log(path: &Path) -> bool {
    path.extension().is_some_and(|ext| ext == "jsonl")
        && path.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
            ["com-", "can-", "gdb-", "rtt-"]
                .iter()
                .any(|k| n.starts_with(k))
        })
}

/// The events of a log that claim a session is open: a start with no later end.
fn open_claims(path: &Path) -> usize {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut open = 0;
    for line in text.lines() {
        let event: Value = serde_json::from_str(line).unwrap_or(Value::Null);
        match event.get("event").and_then(Value::as_str) {
            Some("start") => open += 1,
            Some("stop" | "open_failed") => open = 0,
            _ => {}
        }
    }
    open
}

/// The test's own children (zombies included) whose command name is `comm`.
fn children_named(comm: &str) -> usize {
    let ours = std::process::id().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter_map(|entry| std::fs::read_to_string(entry.path().join("stat")).ok())
        .filter(|stat| {
            let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
                return false;
            };
            let ppid = stat[close + 1..].split_whitespace().nth(1);
            &stat[open + 1..close] == comm && ppid == Some(ours.as_str())
        })
        .count()
}

/// One session kind as the table drives it.
trait Case {
    fn name(&self) -> &'static str;
    /// The lock key of the device under test and the other's.
    fn lock_keys(&self) -> [String; 2];
    /// The locks a start on `device` takes.
    fn keys(&self, device: Device) -> Vec<String> {
        let [under_test, other] = self.lock_keys();
        vec![device.pick(&under_test, &other).clone()]
    }
    fn start(&self, world: &World, device: Device) -> Acted;
    /// The locks of the session registered under the table's id, if one is.
    fn registered(&self) -> Option<Vec<String>>;
    /// Stops the session registered under the table's id (a kind whose start the table never lets
    /// open has none).
    fn stop(&self) {}
    /// Whether the device under test opens again (nothing of ours still has it).
    fn reopens(&self) -> bool {
        true
    }
    /// The children the kind's devices run that are still there.
    fn children(&self) -> usize {
        0
    }
    /// How many children one open session runs.
    fn children_per_session(&self) -> usize {
        0
    }
}

struct Com {
    ptys: [PtyPeer; 2],
    sessions: Arc<crate::serial::Sessions>,
}

impl Com {
    fn new() -> Self {
        Self {
            ptys: [
                PtyPeer::open().expect("a pty"),
                PtyPeer::open().expect("a pty"),
            ],
            sessions: Arc::default(),
        }
    }

    fn device(&self, device: Device) -> String {
        match device {
            Device::UnderTest => self.ptys[0].device().to_owned(),
            Device::Other => self.ptys[1].device().to_owned(),
            Device::Absent => "/dev/ahil-lifecycle-absent-tty".to_owned(),
        }
    }
}

impl Case for Com {
    fn name(&self) -> &'static str {
        "com"
    }

    fn lock_keys(&self) -> [String; 2] {
        [Device::UnderTest, Device::Other].map(|device| format!("com:{}", self.device(device)))
    }

    fn start(&self, world: &World, device: Device) -> Acted {
        let kind = com_session::test_kind(
            "uart",
            &self.device(device),
            self.keys(device),
            &world.host(&self.sessions),
        );
        world.start(kind)
    }

    fn registered(&self) -> Option<Vec<String>> {
        self.sessions.get("uart").map(|s| s.locks.keys().to_vec())
    }

    fn stop(&self) {
        assert!(com_session::stop(&self.sessions, "uart").outcome.ok);
    }

    fn reopens(&self) -> bool {
        let options = OpenOptions {
            device: self.device(Device::UnderTest),
            baud: 115_200,
            assert_dtr: false,
            assert_rts: false,
            max_buffer_bytes: 64,
            write_timeout: std::time::Duration::from_secs(1),
            reader_poll: std::time::Duration::from_millis(20),
        };
        Port::open(&options, None).is_ok_and(|port| port.close(options.write_timeout).is_ok())
    }
}

/// The bridge's name, so this test finds its own children.
const BRIDGE: &str = "lifecycle-brg";

/// A protocol-v2 bridge with nothing on its bus: opens, answers reads with no frames, closes safe.
const BRIDGE_SCRIPT: &str = r#"#!/bin/sh
while read -r line; do
  id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
  case "$line" in
    *'"method":"open"'*) echo "{\"id\":$id,\"result\":{\"ok\":true,\"protocol_version\":2}}" ;;
    *'"method":"close"'*) echo "{\"id\":$id,\"result\":{\"ok\":true,\"protocol_version\":2,\"safe_state_confirmed\":true}}"; exit 0 ;;
    *) sleep 0.05; echo "{\"id\":$id,\"result\":{\"ok\":true,\"frames\":[]}}" ;;
  esac
done
"#;

struct Can {
    bridge: PathBuf,
    absent: PathBuf,
    sessions: Arc<crate::can::Sessions>,
}

impl Can {
    fn new(world: &World) -> Self {
        use std::os::unix::fs::PermissionsExt as _;
        let bridge = world.fixture.tools.join(BRIDGE);
        std::fs::write(&bridge, BRIDGE_SCRIPT).expect("write the bridge");
        std::fs::set_permissions(&bridge, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        Self {
            bridge,
            absent: world.fixture.tools.join("no-such-bridge"),
            sessions: Arc::default(),
        }
    }
}

impl Case for Can {
    fn name(&self) -> &'static str {
        "can"
    }

    fn lock_keys(&self) -> [String; 2] {
        ["can:adapter", "can:other-adapter"].map(String::from)
    }

    fn start(&self, world: &World, device: Device) -> Acted {
        let executable = match device {
            Device::Absent => &self.absent,
            Device::UnderTest | Device::Other => &self.bridge,
        };
        let kind = can_session::test_kind(
            "bus",
            executable,
            &self.keys(device)[0],
            &world.host(&self.sessions),
        );
        world.start(kind)
    }

    fn registered(&self) -> Option<Vec<String>> {
        self.sessions.get("bus").map(|s| s.locks.keys().to_vec())
    }

    fn stop(&self) {
        assert!(can_session::stop(&self.sessions, "bus").outcome.ok);
    }

    fn reopens(&self) -> bool {
        true
    }

    fn children(&self) -> usize {
        children_named(BRIDGE)
    }

    fn children_per_session(&self) -> usize {
        1
    }
}

/// The start steps up to the device's open: a kind whose open needs a target stops there.
const UP_TO_OPEN: [Step; 3] = [Step::Lock, Step::Log, Step::Open];

/// The gdb a debug case's sessions run, under a name of its own so this test finds its own children.
const GDB: &str = "lifecycle-gdb";

/// A debug session: through an OpenOCD that is not there (no start reaches gdb) for the steps up to
/// the server's open; for the registration on two emulated boards, the other one's session first.
struct Debug {
    openocd: PathBuf,
    /// The boards and the gdb that reaches them, for the registration.
    boards: Option<(Boards, PathBuf)>,
    stager: crate::artifacts::Stager,
    policy: crate::artifacts::ArtifactPolicy,
    sessions: Arc<crate::debug::Sessions>,
}

impl Debug {
    fn new(world: &World) -> Self {
        let elf = include_bytes!("../../../../firmware/build/ahil-fw-v1.elf");
        std::fs::write(world.fixture.workspace.join("fw.elf"), elf).expect("an ELF");
        Self {
            openocd: world.fixture.tools.join("no-such-openocd"),
            boards: None,
            stager: crate::artifacts::Stager::new_in(&world.fixture.tools).expect("a stager"),
            policy: crate::artifacts::ArtifactPolicy::from_config(&world.fixture.load().config),
            sessions: Arc::default(),
        }
    }

    fn on_boards(world: &World) -> Self {
        let installed = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .map(|dir| dir.join("gdb-multiarch"))
            .find(|path| path.is_file())
            .expect("gdb-multiarch, which the emulated board needs");
        let gdb = world.fixture.tools.join(GDB);
        std::os::unix::fs::symlink(installed, &gdb).expect("the test's gdb");
        Self {
            boards: Some((Boards::running(world), gdb)),
            ..Self::new(world)
        }
    }
}

impl Case for Debug {
    fn name(&self) -> &'static str {
        "debug"
    }

    fn lock_keys(&self) -> [String; 2] {
        ["probe:lifecycle-debugger", "probe:lifecycle-other-debugger"].map(String::from)
    }

    fn start(&self, world: &World, device: Device) -> Acted {
        let staged = crate::artifacts::resolve(
            &self.policy,
            &self.stager,
            crate::artifacts::ArtifactRef::Path("fw.elf"),
        )
        .expect("the ELF stages");
        let board = (self.boards.as_ref()).map(|(boards, gdb)| (boards.dir(device), gdb.as_path()));
        let kind = debug::test_kind(
            &self.openocd,
            board,
            self.keys(device),
            staged,
            &world.host(&self.sessions),
        );
        world.start(kind)
    }

    fn registered(&self) -> Option<Vec<String>> {
        let live = self.sessions.get()?;
        Some(crate::debug::lock(&live).locks.keys().to_vec())
    }

    fn stop(&self) {
        let tool = crate::catalogue::ToolId::DebugStopSession;
        let limit = std::time::Duration::from_secs(5);
        let stopped = debug_ops::stop_session(tool, &self.sessions, &Value::Null, limit);
        assert!(stopped.outcome.ok, "{:?}", stopped.outcome);
    }

    fn children(&self) -> usize {
        children_named(GDB)
    }

    fn children_per_session(&self) -> usize {
        1
    }
}

/// The shared bus the participant cases attach to.
const SHARED_BUS: &str = "can:shared-adapter";

/// A participant of a shared bus: `tester` under test, `monitor` the other. Its broker cannot be
/// reached from `absent` (a file); from `home` one is reached only when the case serves one there.
struct Participant {
    home: PathBuf,
    absent: PathBuf,
    sessions: Arc<crate::can::Sessions>,
    brokered: bool,
}

impl Participant {
    fn unreachable(world: &World) -> Self {
        let absent = world.fixture.tools.join("home-is-a-file");
        std::fs::write(&absent, b"").expect("a file where the home goes");
        Self {
            home: world.fixture.home.clone(),
            absent,
            sessions: Arc::default(),
            brokered: false,
        }
    }

    /// With a broker over a fake adapter serving `home`'s rendezvous from this process.
    fn brokered(world: &World) -> Self {
        crate::can::broker::fake_adapter_tests::serving_in_process(&world.fixture.home, SHARED_BUS);
        Self {
            brokered: true,
            ..Self::unreachable(world)
        }
    }

    fn participant(device: Device) -> &'static str {
        match device {
            Device::Other => "monitor",
            Device::UnderTest | Device::Absent => "tester",
        }
    }
}

impl Case for Participant {
    fn name(&self) -> &'static str {
        "can participant"
    }

    fn lock_keys(&self) -> [String; 2] {
        [Device::UnderTest, Device::Other].map(|d| format!("{SHARED_BUS}#{}", Self::participant(d)))
    }

    fn start(&self, world: &World, device: Device) -> Acted {
        let home = match device {
            Device::Absent => &self.absent,
            Device::UnderTest | Device::Other => &self.home,
        };
        let kind = can_participant::test_kind(
            home,
            Self::participant(device),
            &self.keys(device)[0],
            &world.host(&self.sessions),
        );
        world.start(kind)
    }

    fn registered(&self) -> Option<Vec<String>> {
        self.sessions
            .get("bus#tester")
            .map(|s| s.locks.keys().to_vec())
    }

    fn stop(&self) {
        let session = self.sessions.get("bus#tester").expect("a session to stop");
        assert!(can_participant::stop(&self.sessions, &session).outcome.ok);
    }

    /// The participant under test attaches again: the failed start took itself off the broker. With
    /// no broker nothing was ever attached.
    fn reopens(&self) -> bool {
        !self.brokered
            || can_participant::test_attaches(&self.home, Self::participant(Device::UnderTest))
    }
}

/// Two emulated boards' directories: the device under test's and the other's. Running, each runs
/// the test firmware past building its RTT control block; not running, nothing answers there.
struct Boards {
    under_test: PathBuf,
    other: PathBuf,
    /// The boards this case runs, stopped when it is dropped.
    running: Vec<ahil_drivers::qemu::Board>,
}

impl Boards {
    fn named(world: &World) -> Self {
        Self {
            under_test: world.fixture.tools.join("board"),
            other: world.fixture.tools.join("other-board"),
            running: Vec::new(),
        }
    }

    fn running(world: &World) -> Self {
        use ahil_drivers::qemu::memory::QemuMemory;
        use ahil_drivers::qemu::{Board, BoardConfig};
        let mut boards = Self::named(world);
        for dir in [&boards.under_test, &boards.other] {
            let image =
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../../firmware/build/ahil-fw-v1.elf");
            let board = Board::start(BoardConfig::new(dir).with_image(image)).expect("a board");
            board.run().expect("the board runs");
            let limit = std::time::Duration::from_secs(5);
            let mut memory = QemuMemory::open(board.paths(), limit).expect("its memory opens");
            // The firmware builds its block just after boot; an RTT start before that finds none.
            let deadline = std::time::Instant::now() + limit;
            while ahil_drivers::rtt::ControlBlock::read(&mut memory, rtt_session::TEST_BLOCK)
                .is_err()
            {
                assert!(std::time::Instant::now() < deadline, "no control block");
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            boards.running.push(board);
        }
        boards
    }

    fn dir(&self, device: Device) -> &Path {
        device.pick(&self.under_test, &self.other)
    }
}

/// An RTT session on the emulated board: none runs for the steps up to the link's open; for the
/// registration two run, and the other board's session takes the id first.
struct Rtt {
    boards: Boards,
    sessions: Arc<crate::rtt::Sessions>,
}

impl Rtt {
    fn new(world: &World) -> Self {
        Self {
            boards: Boards::named(world),
            sessions: Arc::default(),
        }
    }

    fn running(world: &World) -> Self {
        Self {
            boards: Boards::running(world),
            sessions: Arc::default(),
        }
    }
}

impl Case for Rtt {
    fn name(&self) -> &'static str {
        "rtt"
    }

    fn lock_keys(&self) -> [String; 2] {
        ["probe:lifecycle-board", "probe:lifecycle-other-board"].map(String::from)
    }

    fn start(&self, world: &World, device: Device) -> Acted {
        let kind = rtt_session::test_kind(
            self.boards.dir(device),
            self.keys(device),
            &world.host(&self.sessions),
        );
        world.start(kind)
    }

    fn registered(&self) -> Option<Vec<String>> {
        self.sessions.get("board").map(|s| s.locks.keys().to_vec())
    }

    fn stop(&self) {
        assert!(rtt_session::stop(&self.sessions, "board").outcome.ok);
    }
}

/// Each of `steps` failing in a world of its own, with the case `case` makes there.
fn fail_each<C: Case>(steps: &[Step], case: impl Fn(&World) -> C) {
    for &step in steps {
        let world = World::new();
        fail_at(&world, &case(&world), step);
    }
}

/// Fails `step` of a start of `case`'s kind and checks that the start left nothing behind.
fn fail_at(world: &World, case: &dyn Case, step: Step) {
    let what = format!("{} with {step:?} failing", case.name());
    // A session of the same kind is open on the other device: the failed start leaves it alone (a
    // shared bus's broker lives on with it, so the participant under test can attach again).
    let first = matches!(step, Step::Register | Step::Cancel);
    if first {
        let first = case.start(world, Device::Other);
        assert!(
            first.outcome.ok,
            "{what}: the first session starts: {:?}",
            first.outcome
        );
    }
    let mut holder = None;
    match step {
        Step::Lock => {
            let keys = case.keys(Device::UnderTest);
            holder = Some(SessionLocks::take(&world.theirs, keys, "another holder").expect("free"));
        }
        Step::Log => world.block_logs(),
        Step::Open | Step::Register => {}
        // Raised before the start: the flag is only looked at once the device is open.
        Step::Cancel => world.cancel.cancel(),
    }
    let device = if step == Step::Open {
        Device::Absent
    } else {
        Device::UnderTest
    };
    let acted = case.start(world, device);
    let expected = match step {
        Step::Lock => Some("device_busy"),
        Step::Log => Some("audit_unavailable"),
        Step::Open => None,
        Step::Register => Some("session_already_active"),
        Step::Cancel => Some("interrupted"),
    };
    assert!(!acted.outcome.ok, "{what}: the start is refused");
    if let Some(expected) = expected {
        assert_eq!(
            acted.outcome.error_type.as_deref(),
            Some(expected),
            "{what}"
        );
    }
    drop(holder);
    // Checked before the first session (of the last two steps) is stopped, so its stop cannot
    // have closed what the failed start left.
    let keys = case.keys(Device::UnderTest);
    drop(
        SessionLocks::take(&world.theirs, keys, "the next holder").unwrap_or_else(|busy| {
            panic!("{what}: the device lock is free, not {}", busy.summary())
        }),
    );
    assert!(case.reopens(), "{what}: the device opens again");
    let first_session = if first {
        case.children_per_session()
    } else {
        0
    };
    assert_eq!(
        case.children(),
        first_session,
        "{what}: no child process of the failed start remains"
    );
    if first {
        assert_eq!(
            case.registered(),
            Some(case.keys(Device::Other)),
            "{what}: the session that came first is the one registered"
        );
        case.stop();
    }
    assert_eq!(case.registered(), None, "{what}: no session is registered");
    assert_eq!(case.children(), 0, "{what}: no child process remains");
    for log in world.session_logs() {
        assert_eq!(
            open_claims(&log),
            0,
            "{what}: {} claims a session that is not open",
            log.display()
        );
    }
}

#[test]
fn a_com_session_start_failing_at_any_step_leaves_no_lock_session_or_open_log() {
    fail_each(&STEPS, |_| Com::new());
}

#[test]
fn a_can_session_start_failing_at_any_step_leaves_no_lock_session_child_or_open_log() {
    fail_each(&STEPS, Can::new);
}

#[test]
fn a_can_participant_start_failing_at_any_step_leaves_no_lock_session_attachment_or_open_log() {
    fail_each(&UP_TO_OPEN, Participant::unreachable);
    fail_each(&[Step::Register, Step::Cancel], Participant::brokered);
}

#[test]
fn a_debug_session_start_failing_at_any_step_leaves_no_lock_session_gdb_or_open_log() {
    fail_each(&UP_TO_OPEN, Debug::new);
    fail_each(&[Step::Register, Step::Cancel], Debug::on_boards);
}

#[test]
fn an_rtt_session_start_failing_at_any_step_leaves_no_lock_session_or_open_log() {
    fail_each(&UP_TO_OPEN, Rtt::new);
    fail_each(&[Step::Register, Step::Cancel], Rtt::running);
}

#[test]
fn a_session_start_asks_for_writing_only_on_a_write_only_entry() {
    use crate::policy::Action;
    use ahil_config::IoPermissions;
    let asked = |allow_read, allow_write| {
        let grants = IoPermissions {
            allow_read,
            allow_write,
        };
        session_lifecycle::start_action(grants, Action::CanRead, Action::CanWrite)
    };
    assert_eq!(asked(false, true), Action::CanWrite);
    assert_eq!(asked(true, true), Action::CanRead);
    assert_eq!(asked(true, false), Action::CanRead);
    assert_eq!(asked(false, false), Action::CanRead);
}

#[test]
fn a_read_waits_as_asked_within_its_ceiling_and_never_below_zero() {
    use std::time::Duration;
    let wait = |args: Value, max_s| session_lifecycle::read_wait(&args, 0.5, max_s);
    assert_eq!(
        wait(serde_json::json!({}), 10.0),
        Duration::from_millis(500)
    );
    assert_eq!(
        wait(serde_json::json!({"wait_timeout_s": 2.0}), 10.0),
        Duration::from_secs(2)
    );
    assert_eq!(
        wait(serde_json::json!({"wait_timeout_s": 99.0}), 10.0),
        Duration::from_secs(10)
    );
    assert_eq!(
        wait(serde_json::json!({"wait_timeout_s": -1.0}), 10.0),
        Duration::ZERO
    );
    // A bus whose own timeout is below zero still reads without waiting, not with a panic.
    assert_eq!(
        wait(serde_json::json!({"wait_timeout_s": 1.0}), -3.0),
        Duration::ZERO
    );
}

mod debug_stop;
mod names;
