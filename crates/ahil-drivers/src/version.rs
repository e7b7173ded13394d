//! The `debugger_info` driver: `<pinned executable> --version` and nothing else.
//!
//! This is the one backend call that provably never reaches a probe or a board (no script, no adapter
//! selection), so every outcome carries [`Contact::None`] and the gate may call it retry-safe.

use std::path::Path;
use std::time::Duration;

use crate::error::{Contact, DriverError, Transcript};
use crate::probe_cli;
use crate::process::{self, CancelFlag, Command, Exit};

/// The version check never waits longer than this, whatever the entry's `timeout_s` says.
pub const VERSION_TIMEOUT_CAP: Duration = Duration::from_secs(10);

/// Version output is a banner; 64 KiB is far more than any toolchain prints for `--version`.
const VERSION_OUTPUT_CAP: usize = 64 * 1024;

/// The debugger toolchains a configuration can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// OpenOCD (`type: openocd`).
    OpenOcd,
    /// pyOCD (`type: pyocd`).
    PyOcd,
    /// STM32CubeProgrammer's CLI (`type: stlink`).
    StLink,
    /// An emulated board: `qemu-system-arm` (`type: qemu`, our extension).
    Qemu,
    /// Espressif's esptool, through the board's USB-UART bridge (`type: esptool`).
    Esptool,
    /// probe-rs, linked into our own worker process (`type: probe-rs`).
    ProbeRs,
}

impl Backend {
    /// The configuration's name for this backend (`debuggers.<n>.type`).
    pub fn config_name(self) -> &'static str {
        match self {
            Self::OpenOcd => "openocd",
            Self::PyOcd => "pyocd",
            Self::StLink => "stlink",
            Self::Qemu => "qemu",
            Self::Esptool => "esptool",
            Self::ProbeRs => "probe-rs",
        }
    }

    /// The product name used in summaries.
    pub fn product(self) -> &'static str {
        match self {
            Self::OpenOcd => "OpenOCD",
            Self::PyOcd => "pyOCD",
            Self::StLink => "STM32CubeProgrammer",
            Self::Qemu => "QEMU",
            Self::Esptool => "esptool",
            Self::ProbeRs => "probe-rs",
        }
    }
}

/// What `--version` told us.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionReport {
    /// The first meaningful version line, or a sentence saying the output was empty.
    pub version: String,
    /// The command line that ran, for the log.
    pub command: String,
    /// Captured stdout.
    pub stdout: String,
    /// Captured stderr.
    pub stderr: String,
    /// Wall time of the check.
    pub elapsed: Duration,
    /// Always [`Contact::None`]: `--version` drives no probe.
    pub contact: Contact,
}

fn no_contact() -> Contact {
    Contact::none("only `--version` ran; no probe or target was addressed")
}

/// Run `<executable> --version` with `min(timeout, 10 s)`, in the executable's directory.
pub fn debugger_version(
    backend: Backend,
    executable: &Path,
    timeout: Duration,
    cancel: Option<CancelFlag>,
) -> Result<VersionReport, DriverError> {
    let mut command = Command::new(executable)
        .arg("--version")
        .deadline(timeout.min(VERSION_TIMEOUT_CAP))
        .output_cap(VERSION_OUTPUT_CAP);
    if let Some(dir) = process::own_directory(executable) {
        command = command.current_dir(dir);
    }
    if let Some(flag) = cancel {
        command = command.cancel_on(flag);
    }
    let finished = process::run(&command).map_err(|error| {
        if process::not_executable_reason(&error).is_some() {
            let line = command.display_line();
            DriverError::Classified(probe_cli::not_started(
                &error,
                "debugger_not_found",
                vec![Transcript {
                    command: line,
                    ..Transcript::default()
                }],
            ))
        } else {
            DriverError::DebuggerNotFound {
                detail: error.to_string(),
                contact: no_contact(),
            }
        }
    })?;
    let stdout = finished.stdout_text();
    let stderr = finished.stderr_text();
    let output = format!("{stdout}{stderr}");
    match finished.exit {
        Exit::Code(0) => Ok(VersionReport {
            version: version_line(backend, &stdout, &stderr),
            command: command.display_line(),
            stdout,
            stderr,
            elapsed: finished.elapsed,
            contact: no_contact(),
        }),
        Exit::TimedOut | Exit::Cancelled => Err(DriverError::Timeout {
            limit: timeout.min(VERSION_TIMEOUT_CAP),
            contact: no_contact(),
            output,
        }),
        Exit::Code(code) => Err(DriverError::Backend {
            detail: format!("`--version` exited with status {code}"),
            contact: no_contact(),
            exit_code: Some(code),
            output,
        }),
        Exit::Signal(signal) => Err(DriverError::Backend {
            detail: format!("`--version` was ended by signal {signal}"),
            contact: no_contact(),
            exit_code: None,
            output,
        }),
    }
}

/// Pick the version line out of the banner. OpenOCD prints its banner on stderr, pyOCD a bare version on
/// stdout, STM32_Programmer_CLI a box of dashes before `STM32CubeProgrammer version: x`.
pub fn version_line(backend: Backend, stdout: &str, stderr: &str) -> String {
    let lines = || {
        stdout
            .lines()
            .chain(stderr.lines())
            .map(str::trim)
            .filter(|line| !line.is_empty())
    };
    if backend == Backend::StLink {
        const MARKER: &str = "STM32CubeProgrammer version:";
        if let Some(rest) =
            lines().find_map(|line| line.find(MARKER).map(|i| &line[i + MARKER.len()..]))
        {
            let number = rest.split_whitespace().next().unwrap_or_default();
            return format!("STM32CubeProgrammer {number}")
                .trim_end()
                .to_owned();
        }
    }
    lines().next().map_or_else(
        || format!("{} version output was empty.", backend.product()),
        str::to_owned,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe_cli::fake::install_sh;
    use std::fs;

    #[test]
    fn openocd_reports_the_banner_it_prints_on_stderr() {
        let (_dir, exe) = install_sh(
            "openocd",
            "echo 'Open On-Chip Debugger 0.12.0' >&2\necho 'Licensed under GNU GPL v2' >&2",
        );
        let report =
            debugger_version(Backend::OpenOcd, &exe, Duration::from_mins(1), None).expect("runs");
        assert_eq!(report.version, "Open On-Chip Debugger 0.12.0");
        assert!(matches!(report.contact, Contact::None { .. }));
    }

    #[test]
    fn pyocd_reports_its_bare_version() {
        assert_eq!(version_line(Backend::PyOcd, "\n  0.36.0  \n", ""), "0.36.0");
    }

    #[test]
    fn stm32_programmer_reports_the_version_behind_its_banner_box() {
        let stdout = "   -------------------\n   STM32CubeProgrammer v2.16.0\nSTM32CubeProgrammer version: 2.16.0 \n";
        assert_eq!(
            version_line(Backend::StLink, stdout, ""),
            "STM32CubeProgrammer 2.16.0"
        );
    }

    #[test]
    fn stm32_programmer_without_the_marker_falls_back_to_the_first_line() {
        assert_eq!(
            version_line(Backend::StLink, "\nhello world\n", ""),
            "hello world"
        );
    }

    #[test]
    fn stdout_comes_before_stderr() {
        assert_eq!(
            version_line(Backend::OpenOcd, "xx\n", "Open On-Chip Debugger\n"),
            "xx"
        );
    }

    #[test]
    fn empty_output_says_so_in_the_backends_own_name() {
        assert_eq!(
            version_line(Backend::OpenOcd, "", " \n"),
            "OpenOCD version output was empty."
        );
        assert_eq!(
            version_line(Backend::PyOcd, "", ""),
            "pyOCD version output was empty."
        );
    }

    #[test]
    fn a_hanging_executable_times_out_with_proof_of_no_contact() {
        let (_dir, exe) = install_sh("openocd", "sleep 30");
        let started = std::time::Instant::now();
        let error = debugger_version(Backend::OpenOcd, &exe, Duration::from_millis(300), None)
            .expect_err("must time out");
        assert_eq!(error.error_type(), "timeout");
        assert!(matches!(error.contact(), Contact::None { .. }));
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn the_version_check_never_waits_longer_than_ten_seconds() {
        let (_dir, exe) = install_sh("openocd", "sleep 30");
        let cancel = CancelFlag::default();
        // Cancel after a moment so the test is quick; the limit reported is still the cap.
        let trigger = cancel.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            trigger.cancel();
        });
        let error = debugger_version(
            Backend::OpenOcd,
            &exe,
            Duration::from_mins(10),
            Some(cancel),
        )
        .expect_err("cancelled");
        assert!(
            matches!(error, DriverError::Timeout { limit, .. } if limit == VERSION_TIMEOUT_CAP)
        );
    }

    #[test]
    fn a_missing_executable_is_debugger_not_found_without_contact() {
        let error = debugger_version(
            Backend::OpenOcd,
            Path::new("/nonexistent/openocd"),
            Duration::from_secs(5),
            None,
        )
        .expect_err("missing");
        assert_eq!(error.error_type(), "debugger_not_found");
        assert!(matches!(error.contact(), Contact::None { .. }));
    }

    #[test]
    fn a_non_zero_exit_is_a_debugger_error_without_contact() {
        let (_dir, exe) = install_sh("openocd", "echo boom >&2\nexit 3");
        let error = debugger_version(Backend::OpenOcd, &exe, Duration::from_secs(5), None)
            .expect_err("fails");
        assert_eq!(error.error_type(), "debugger_error");
        assert!(matches!(
            error,
            DriverError::Backend { exit_code: Some(3), ref output, .. } if output.contains("boom")
        ));
    }

    #[test]
    fn a_file_that_is_not_executable_is_debugger_not_executable() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("openocd");
        fs::write(&path, "not a program").expect("write");
        let error = debugger_version(Backend::OpenOcd, &path, Duration::from_secs(5), None)
            .expect_err("not executable");
        assert_eq!(error.error_type(), "debugger_not_executable");
    }
}
