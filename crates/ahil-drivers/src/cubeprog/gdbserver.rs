//! ST-LINK_gdbserver (`gdb_server_executable`) as the gdb server of a `type: stlink` debug session.
//! STM32CubeProgrammer's CLI serves no gdb, so the session runs ST's own server, which STM32CubeCLT
//! installs beside it and which loads the CLI's libraries from the directory `-cp` names.
//!
//! It runs exactly like OpenOCD's server: a reserved loopback port, its own process group under a
//! keeper, killed and reaped when the session lets go of it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::openocd::gdbserver::{self, GdbServer, ServerError};
use crate::probe_cli::any;

/// One entry's ST-LINK gdb server.
#[derive(Debug, Clone)]
pub struct StlinkGdbServer {
    executable: PathBuf,
    programmer_dir: Option<PathBuf>,
    probe_id: Option<String>,
    swd: bool,
}

impl StlinkGdbServer {
    /// The server at `executable`; `programmer_cli` is the entry's pinned STM32_Programmer_CLI, whose
    /// directory the server needs; `swd` false means JTAG.
    pub fn new(
        executable: PathBuf,
        programmer_cli: Option<&Path>,
        probe_id: Option<&str>,
        swd: bool,
    ) -> Self {
        Self {
            executable,
            programmer_dir: programmer_cli.and_then(Path::parent).map(Path::to_path_buf),
            probe_id: probe_id.map(str::to_owned),
            swd,
        }
    }

    /// The argv after the executable for a server on `port`. `-g` attaches without resetting: a
    /// reset is the session's to ask for through gdb. `-e` keeps the server up across gdb
    /// disconnects, because the readiness check is itself a connection that ends at once.
    pub fn argv(&self, port: u16) -> Vec<OsString> {
        let mut argv: Vec<OsString> = vec!["-p".into(), port.to_string().into(), "-e".into()];
        if self.swd {
            argv.push("-d".into());
        }
        if let Some(dir) = &self.programmer_dir {
            argv.push("-cp".into());
            argv.push(dir.clone().into_os_string());
        }
        if let Some(serial) = &self.probe_id {
            argv.push("-i".into());
            argv.push(serial.into());
        }
        argv.push("-g".into());
        argv
    }

    /// Starts the server and waits up to `limit` for its port; a raised `cancel` ends the wait as
    /// its limit would.
    pub fn start(
        &self,
        limit: Duration,
        cancel: Option<&crate::process::CancelFlag>,
    ) -> Result<GdbServer, ServerError> {
        // The serial follows `-i` as its own argument, and the server reads a word starting with
        // `-` as its next option (`-f` names a log file); no probe's serial starts so.
        if self
            .probe_id
            .as_deref()
            .is_some_and(|id| id.starts_with('-'))
        {
            return Err(ServerError::Spawn(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "probe_id starts with `-`, which ST-LINK_gdbserver would read as an option",
            )));
        }
        gdbserver::spawn_unless(&self.executable, |port| self.argv(port), limit, cancel)
    }
}

/// The class of a server that ended before its port opened, read from its own words.
pub fn classify_exit(output: &str) -> &'static str {
    let lower = output.to_lowercase();
    if any(&lower, &super::NO_STLINK) {
        return "probe_not_found";
    }
    if any(&lower, &super::USB_LINK_REFUSED) {
        return "adapter_usb_error";
    }
    if any(
        &lower,
        &[
            "no device found on target",
            "cannot connect to target",
            "target not found",
            "unable to connect",
        ],
    ) {
        return "target_not_detected";
    }
    "probe_server_open_failed"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe_cli::fake::{self, strings};

    #[test]
    fn the_server_serves_the_reserved_port_with_the_programmers_directory_and_the_probe() {
        let server = StlinkGdbServer::new(
            PathBuf::from("/opt/st/clt/STLink-gdb-server/bin/ST-LINK_gdbserver"),
            Some(Path::new(
                "/opt/st/clt/STM32CubeProgrammer/bin/STM32_Programmer_CLI",
            )),
            Some("066DFF535254"),
            true,
        );
        assert_eq!(
            strings(&server.argv(40123)),
            [
                "-p",
                "40123",
                "-e",
                "-d",
                "-cp",
                "/opt/st/clt/STM32CubeProgrammer/bin",
                "-i",
                "066DFF535254",
                "-g"
            ]
        );
    }

    #[test]
    fn jtag_drops_the_swd_flag() {
        let server = StlinkGdbServer::new(PathBuf::from("ST-LINK_gdbserver"), None, None, false);
        assert_eq!(strings(&server.argv(1)), ["-p", "1", "-e", "-g"]);
    }

    #[test]
    fn an_early_exit_is_told_apart_by_the_servers_words() {
        assert_eq!(
            classify_exit("Error in initializing ST-LINK device.\nReason: No ST-LINK detected!"),
            "probe_not_found"
        );
        assert_eq!(
            classify_exit(
                "Error in initializing ST-LINK device.\nReason: No device found on target."
            ),
            "target_not_detected"
        );
        assert_eq!(
            classify_exit("Error in initializing ST-LINK device.\nReason: ST-LINK DLL error."),
            "probe_server_open_failed"
        );
        assert_eq!(
            classify_exit("Error in initializing ST-LINK device.\nReason: Target USB comms error."),
            "adapter_usb_error"
        );
    }

    #[test]
    fn a_probe_id_the_server_would_read_as_an_option_never_starts_it() {
        let (dir, exe) = fake::install_server_never_ready("ST-LINK_gdbserver");
        let error = StlinkGdbServer::new(exe, None, Some("-f"), true)
            .start(Duration::from_millis(300), None)
            .err()
            .expect("no server");
        assert!(matches!(error, ServerError::Spawn(_)), "{error}");
        assert!(!dir.path().join("pid").exists(), "the server ran");
    }

    #[test]
    fn a_server_that_never_opens_its_port_is_killed_at_the_limit() {
        let (dir, exe) = fake::install_server_never_ready("ST-LINK_gdbserver");
        let error = StlinkGdbServer::new(exe, None, None, true)
            .start(Duration::from_millis(300), None)
            .err()
            .expect("no server");
        fake::assert_not_ready_and_gone(&error, dir.path());
    }
}
