//! Executable pinning at authoritative load.
//!
//! Every program the bench may run is resolved once, to an absolute path outside the
//! workspace (repository-controlled code must never run as the debugger), and the gate only
//! ever runs that path. A configured program that cannot be pinned refuses the whole file;
//! an autodetected one that is absent only disables its entry.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::Serialize;

use crate::discover::Environment;
use crate::error::{ConfigError, Refusal};
use crate::model::{CanAdapter, Config, DebuggerType};
use crate::paths::{absolute_lexical, expand_tilde, is_within};

/// What became of one executable field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ExecutableState {
    /// Resolved to this absolute path, whose target is a single-link regular file outside the
    /// workspace. The path is the operator's spelling (a link stays a link), so the program is run,
    /// and shows in `ps`, under the name the configuration gave it.
    Pinned { path: PathBuf },
    /// The untouched starter entry: nothing names hardware, so nothing is looked up.
    Unbound { reason: String },
    /// Autodetection found nothing usable; the entry drives nothing.
    Disabled { reason: String },
}

impl ExecutableState {
    pub fn path(&self) -> Option<&Path> {
        match self {
            Self::Pinned { path } => Some(path),
            _ => None,
        }
    }
}

/// The pinned programs of a loaded configuration, keyed by entry name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PinnedExecutables {
    pub debuggers: IndexMap<String, ExecutableState>,
    /// `gdb_server_executable` of entries that name one, and autodetected for stlink.
    pub gdb_servers: IndexMap<String, ExecutableState>,
    pub gdb: Option<ExecutableState>,
    /// Only buses that name or need a bridge program.
    pub can_buses: IndexMap<String, ExecutableState>,
}

impl PinnedExecutables {
    pub fn debugger(&self, name: &str) -> Option<&Path> {
        self.debuggers.get(name).and_then(ExecutableState::path)
    }
}

fn autodetect_names(kind: DebuggerType) -> &'static [&'static str] {
    match kind {
        DebuggerType::Openocd => &["openocd"],
        DebuggerType::Stlink => &["STM32_Programmer_CLI"],
        DebuggerType::Pyocd => &["pyocd"],
        DebuggerType::Esptool => &["esptool", "esptool.py"],
        DebuggerType::Qemu => &["qemu-system-arm"],
        // probe-rs runs inside this binary's own worker command; there is nothing to look up.
        DebuggerType::ProbeRs => &[],
    }
}

/// Where STM32CubeProgrammer installs itself when it is not on PATH.
fn stlink_install_dirs(env: &Environment) -> Vec<PathBuf> {
    let mut dirs = vec![
        PathBuf::from("/opt/st/STM32CubeProgrammer/bin"),
        PathBuf::from("/usr/local/STMicroelectronics/STM32Cube/STM32CubeProgrammer/bin"),
        env.account_home()
            .join("STMicroelectronics/STM32Cube/STM32CubeProgrammer/bin"),
    ];
    if let Ok(rd) = std::fs::read_dir("/opt/st") {
        let mut clts: Vec<PathBuf> = rd
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("stm32cubeclt"))
            })
            .map(|p| p.join("STM32CubeProgrammer/bin"))
            .collect();
        clts.sort();
        dirs.extend(clts);
    }
    dirs
}

struct Pinner<'a> {
    workspace: &'a Path,
    env: &'a Environment,
}

enum Lookup {
    Found,
    Refused(Refusal),
}

impl Pinner<'_> {
    fn display(&self, p: &Path) -> String {
        self.env.display_path(p)
    }

    /// The load's search list (never the process's PATH); absolute entries only: a relative entry
    /// would resolve inside the workspace.
    fn search_path(&self, name: &str, extra: &[PathBuf]) -> Option<PathBuf> {
        let path_dirs = self
            .env
            .path
            .as_deref()
            .map(|p| std::env::split_paths(p).collect::<Vec<_>>())
            .unwrap_or_default();
        path_dirs
            .into_iter()
            .chain(extra.iter().cloned())
            .filter(|d| d.is_absolute())
            .map(|d| d.join(name))
            .find(|c| {
                c.metadata()
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            })
    }

    /// Follows links to the real file, then requires it outside the workspace, regular and
    /// single-link (a hard link could be swapped for the workspace's copy behind our back).
    fn vet(&self, candidate: &Path, field: &str) -> Lookup {
        let Ok(real) = candidate.canonicalize() else {
            return Lookup::Refused(not_a_file(field, &self.display(candidate)));
        };
        let ws_real = self
            .workspace
            .canonicalize()
            .unwrap_or_else(|_| self.workspace.to_path_buf());
        if is_within(&real, &ws_real) || is_within(candidate, self.workspace) {
            return Lookup::Refused(
                Refusal::new("A configured executable must be stored outside the workspace.")
                    .at(field)
                    .with("path", self.display(&real))
                    .fix("Install the tool outside the project and name that path."),
            );
        }
        match real.symlink_metadata() {
            Ok(md) if md.is_file() && md.nlink() == 1 => Lookup::Found,
            _ => Lookup::Refused(not_a_file(field, &self.display(&real))),
        }
    }

    /// A value the operator wrote, pinned: a bare name is looked up in the trusted search list,
    /// anything with a separator is a path relative to the workspace.
    fn configured(&self, raw: &str, field: &str) -> Result<ExecutableState, ConfigError> {
        let is_path = raw.contains('/') || raw.contains('\\') || raw.starts_with('~');
        let candidate = if is_path {
            absolute_lexical(&expand_tilde(raw, &self.env.account_home()), self.workspace)
        } else {
            match self.search_path(raw, &[]) {
                Some(p) => p,
                None => {
                    return Err(ConfigError::invalid(
                        Refusal::new("A configured executable was not found in the system's program directories.")
                            .at(field)
                            .with("value", raw.to_owned())
                            .fix("Install it, or name it by absolute path."),
                    ));
                }
            }
        };
        match self.vet(&candidate, field) {
            Lookup::Found => Ok(ExecutableState::Pinned { path: candidate }),
            Lookup::Refused(r) => Err(ConfigError::invalid(r)),
        }
    }

    fn autodetect(&self, names: &[&str], extra: &[PathBuf], field: &str) -> ExecutableState {
        for name in names {
            if let Some(path) = self.search_path(name, extra)
                && let Lookup::Found = self.vet(&path, field)
            {
                return ExecutableState::Pinned { path };
            }
        }
        ExecutableState::Disabled {
            reason: format!(
                "none of {} was found in the system's program directories",
                names.join(", ")
            ),
        }
    }
}

fn not_a_file(field: &str, shown: &str) -> Refusal {
    Refusal::new("A configured executable must be an existing single-link regular file.")
        .at(field)
        .with("path", shown.to_owned())
        .fix("Name the real program file, not a directory or a hard-linked copy.")
}

/// The toolchain of `kind` this host would pin for an entry that names none (on PATH, or where its
/// installer puts it), vetted as a pinned executable is; `None` when there is none.
pub fn autodetect_tool(kind: DebuggerType, workspace: &Path, env: &Environment) -> Option<PathBuf> {
    let p = Pinner { workspace, env };
    let extra = if kind == DebuggerType::Stlink {
        stlink_install_dirs(env)
    } else {
        Vec::new()
    };
    p.autodetect(autodetect_names(kind), &extra, "executable")
        .path()
        .map(Path::to_path_buf)
}

pub(crate) fn pin_executables(
    cfg: &Config,
    env: &Environment,
) -> Result<PinnedExecutables, ConfigError> {
    let p = Pinner {
        workspace: &cfg.workspace_root,
        env,
    };
    let mut out = PinnedExecutables::default();
    for (name, d) in &cfg.debuggers {
        let field = format!("debuggers.{name}.executable");
        let state = match &d.executable {
            Some(raw) => p.configured(raw, &field)?,
            None if d.kind == DebuggerType::ProbeRs => match std::env::current_exe() {
                Ok(path) => ExecutableState::Pinned { path },
                Err(error) => ExecutableState::Disabled {
                    reason: format!("this program's own path is unknown ({error})"),
                },
            },
            None if d.is_placeholder_starter() => ExecutableState::Unbound {
                reason: "the entry names no executable, probe or target yet".into(),
            },
            None => {
                let extra = if d.kind == DebuggerType::Stlink {
                    stlink_install_dirs(env)
                } else {
                    Vec::new()
                };
                p.autodetect(autodetect_names(d.kind), &extra, &field)
            }
        };
        out.debuggers.insert(name.clone(), state);
        let gfield = format!("debuggers.{name}.gdb_server_executable");
        match &d.gdb_server_executable {
            Some(raw) => {
                out.gdb_servers
                    .insert(name.clone(), p.configured(raw, &gfield)?);
            }
            None if d.kind == DebuggerType::Stlink => {
                let extra = stlink_install_dirs(env);
                out.gdb_servers.insert(
                    name.clone(),
                    p.autodetect(&["ST-LINK_gdbserver"], &extra, &gfield),
                );
            }
            None => {}
        }
        if let Some(ExecutableState::Pinned { .. }) = out.debuggers.get(name)
            && d.kind == DebuggerType::Openocd
        {
            check_script(
                &p,
                &d.interface_cfg,
                &format!("debuggers.{name}.interface_cfg"),
            )?;
            check_script(&p, &d.target_cfg, &format!("debuggers.{name}.target_cfg"))?;
        }
    }
    out.gdb = Some(match &cfg.debug.gdb_executable {
        Some(raw) => p.configured(raw, "debug.gdb_executable")?,
        None => p.autodetect(
            &["arm-none-eabi-gdb", "gdb-multiarch", "gdb"],
            &[],
            "debug.gdb_executable",
        ),
    });
    for (name, bus) in &cfg.can_buses {
        let field = format!("can_buses.{name}.executable");
        match &bus.executable {
            Some(raw) => {
                out.can_buses
                    .insert(name.clone(), p.configured(raw, &field)?);
            }
            None if bus.adapter == CanAdapter::Process => {
                return Err(ConfigError::invalid(
                    Refusal::new("A process-bridge CAN bus needs `executable`, and none is set.")
                        .at(field)
                        .fix("Name the bridge program by absolute path, outside the workspace."),
                ));
            }
            None => {}
        }
    }
    Ok(out)
}

/// An OpenOCD script is either a search name OpenOCD resolves itself (relative, forward
/// slashes, no component starting with `.` or `~`) or an absolute file outside the workspace.
fn check_script(p: &Pinner<'_>, raw: &str, field: &str) -> Result<(), ConfigError> {
    if is_search_name(raw) {
        return Ok(());
    }
    let path = Path::new(raw);
    if !path.is_absolute() {
        return Err(ConfigError::invalid(
            Refusal::new("An OpenOCD script that is not a plain search name must be an absolute path.")
                .at(field)
                .with("value", raw.to_owned())
                .fix("Use a name like `interface/stlink.cfg`, or an absolute path outside the workspace."),
        ));
    }
    match p.vet(path, field) {
        Lookup::Found => Ok(()),
        Lookup::Refused(mut r) => {
            r.summary = r.summary.replace("executable", "debugger script");
            Err(ConfigError::invalid(r))
        }
    }
}

pub(crate) fn is_search_name(raw: &str) -> bool {
    let drive =
        raw.len() >= 2 && raw.as_bytes()[1] == b':' && raw.as_bytes()[0].is_ascii_alphabetic();
    !raw.is_empty()
        && !raw.starts_with('/')
        && !raw.contains('\\')
        && !drive
        && raw
            .split('/')
            .all(|c| !c.is_empty() && !c.starts_with('.') && !c.starts_with('~'))
}

/// Workspace-relative directories the bench writes or reads must stay inside the
/// workspace, links included.
pub(crate) fn check_workspace_paths(cfg: &Config) -> Result<(), ConfigError> {
    let ws = &cfg.workspace_root;
    let ws_real = ws.canonicalize().unwrap_or_else(|_| ws.clone());
    let mut fields: Vec<(String, &str)> = cfg
        .artifacts
        .allowed_roots
        .iter()
        .enumerate()
        .map(|(i, r)| (format!("artifacts.allowed_roots[{i}]"), r.as_str()))
        .collect();
    fields.push((
        "artifacts.upload_directory".into(),
        &cfg.artifacts.upload_directory,
    ));
    fields.push(("reports.directory".into(), &cfg.reports.directory));
    fields.push(("logs.directory".into(), &cfg.logs.directory));
    for (field, raw) in fields {
        let lexical = absolute_lexical(Path::new(raw), ws);
        let real_ok = lexical
            .canonicalize()
            .map_or(true, |r| is_within(&r, &ws_real));
        if !is_within(&lexical, ws) || !real_ok {
            return Err(ConfigError::invalid(
                Refusal::new("Artifact and output directories must stay inside the workspace.")
                    .at(field)
                    .with("value", raw.to_owned())
                    .fix("Use a path relative to the workspace that does not leave it."),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_names_are_plain_relative_script_names() {
        assert!(is_search_name("interface/stlink.cfg"));
        assert!(is_search_name("in.cfg"));
        for bad in [
            "./x.cfg",
            "../x",
            "~/x.cfg",
            "interface/../x.cfg",
            "C:/x.cfg",
            "a\\b",
            "/abs.cfg",
            "",
            "a//b",
        ] {
            assert!(!is_search_name(bad), "{bad}");
        }
    }
}
