//! What the benches that run beside the reference share: where the reference is, and one workspace
//! with its own HOME, initialized by this binary, that both implementations are started in.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The reference 0.25 binary: `AHIL_REFERENCE_BIN`, else the venv `scripts/setup-debian.sh` makes.
#[allow(dead_code, reason = "not every bench runs beside the reference")]
pub fn reference_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("AHIL_REFERENCE_BIN") {
        return Some(PathBuf::from(path));
    }
    let local =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/reference-venv/bin/agentic-hil");
    local.exists().then_some(local)
}

/// One workspace with a configuration both implementations accept (written by ours).
pub struct World {
    _root: tempfile::TempDir,
    pub home: PathBuf,
    pub workspace: PathBuf,
}

impl World {
    pub fn new(ours: &Path) -> Self {
        let root = tempfile::tempdir().expect("temp dir");
        let base = std::fs::canonicalize(root.path()).expect("resolve temp dir");
        let home = base.join("home");
        let workspace = base.join("ws");
        std::fs::create_dir_all(&home).expect("home");
        std::fs::create_dir_all(&workspace).expect("workspace");
        let world = Self {
            _root: root,
            home,
            workspace,
        };
        let status = world
            .command(ours)
            .args(["init", "--json"])
            .stdout(Stdio::null())
            .status()
            .expect("init runs");
        assert!(status.success(), "init succeeds");
        world
    }

    /// The configuration file `init` wrote (the one project under this HOME).
    #[allow(dead_code, reason = "not every bench writes its own configuration")]
    pub fn config_path(&self) -> PathBuf {
        let projects = self.home.join(".config/agentic-hil/projects");
        std::fs::read_dir(&projects)
            .expect("init wrote a project")
            .flatten()
            .next()
            .expect("one project")
            .path()
            .join("config.yaml")
    }

    /// `program` in the workspace, with nothing of the caller's environment but PATH.
    pub fn command(&self, program: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(&self.workspace)
            .env_clear()
            .env("HOME", &self.home)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("XDG_STATE_HOME", self.home.join(".local/state"));
        cmd
    }
}
