//! A real labgrid coordinator for the tests (labgrid 26.0.1 from `target/labgrid-venv`, installed by
//! `scripts/setup-debian.sh`), on a free loopback port, with its own directory as its working
//! directory (it writes `places.yaml` and `resources.yaml` there), in its own process group, killed
//! and reaped when dropped; and `labgrid-client` to act as the lab's other users.

use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The venv's `bin/`.
fn venv_bin() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/labgrid-venv/bin")
}

pub struct Lab {
    child: Child,
    /// `127.0.0.1:<port>`.
    pub address: String,
    dir: PathBuf,
}

impl Lab {
    /// Starts a coordinator with `dir` (created) as its working directory and waits until it
    /// listens.
    pub fn start(dir: &Path) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port();
        Self::start_at(dir, &format!("127.0.0.1:{port}"))
    }

    /// Starts a coordinator listening on `address` (`127.0.0.1:<port>`).
    pub fn start_at(dir: &Path, address: &str) -> Self {
        let coordinator = venv_bin().join("labgrid-coordinator");
        assert!(
            coordinator.is_file(),
            "labgrid is missing from target/labgrid-venv: run scripts/setup-debian.sh"
        );
        std::fs::create_dir_all(dir).expect("the coordinator's directory is made");
        let address = address.to_owned();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("coordinator.log"))
            .expect("log file");
        let child = Command::new(&coordinator)
            .args(["-l", &address])
            .current_dir(dir)
            // Its "place acquired by" lines reach the log as they happen.
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log handle"))
            .stderr(log)
            .process_group(0)
            .spawn()
            .expect("labgrid-coordinator starts");
        let lab = Self {
            child,
            address,
            dir: dir.to_path_buf(),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(&lab.address).is_err() {
            assert!(
                Instant::now() < deadline,
                "the coordinator did not listen within 20 s: {}",
                lab.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        lab
    }

    /// What the coordinator printed so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("coordinator.log")).unwrap_or_default()
    }

    /// `labgrid-client -x <address> <args>` as `host/user`.
    pub fn client(&self, host_user: &str, args: &[&str]) -> Output {
        let (host, user) = host_user
            .split_once('/')
            .expect("a labgrid user is host/user");
        Command::new(venv_bin().join("labgrid-client"))
            .arg("-x")
            .arg(&self.address)
            .args(args)
            .env("LG_HOSTNAME", host)
            .env("LG_USERNAME", user)
            .env_remove("LG_COORDINATOR")
            .env_remove("LG_PLACE")
            .stdin(Stdio::null())
            .output()
            .expect("labgrid-client runs")
    }

    /// Like [`Lab::client`], failing the test unless the client succeeds; its standard output.
    pub fn ok(&self, host_user: &str, args: &[&str]) -> String {
        let out = self.client(host_user, args);
        assert!(
            out.status.success(),
            "labgrid-client {args:?} as {host_user}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Creates `place` (with a match, so it can be acquired without resources).
    pub fn create_place(&self, place: &str) {
        self.ok("lab/admin", &["-p", place, "create"]);
        self.ok(
            "lab/admin",
            &["-p", place, "add-match", &format!("x/{place}/*")],
        );
    }

    /// Acquires `place` as `host/user`.
    pub fn acquire(&self, host_user: &str, place: &str) {
        self.ok(host_user, &["-p", place, "acquire", "--allow-unmatched"]);
    }

    /// Releases `place` as `host/user`.
    pub fn release(&self, host_user: &str, place: &str) {
        self.ok(host_user, &["-p", place, "release"]);
    }

    /// The coordinator's own account of acquisitions and releases, in order: its
    /// `<place>: place acquired by <user>` and `<place>: place released` lines.
    pub fn place_events(&self) -> Vec<String> {
        self.log()
            .lines()
            .filter(|l| l.contains(": place acquired by ") || l.contains(": place released"))
            .map(str::to_owned)
            .collect()
    }

    /// Who holds `place` now, as `labgrid-client show` prints it (`host/user`), if anyone.
    pub fn holder(&self, place: &str) -> Option<String> {
        self.ok("lab/admin", &["-p", place, "show"])
            .lines()
            .find_map(|l| l.trim().strip_prefix("acquired: "))
            .filter(|who| *who != "None")
            .map(str::to_owned)
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.child.id())
            && let Some(group) = rustix::process::Pid::from_raw(pid)
        {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
        let _ = self.child.wait();
    }
}
