//! What the three probe CLIs (OpenOCD, pyOCD, STM32CubeProgrammer) share: running one command in its
//! own process group under the entry's timeout, the success/failure vocabulary, and the trait the gate
//! drives them through.
//!
//! A CLI backend decides success from the child's own words. Each backend module classifies output into
//! a backend class; this module turns a class into a [`DriverError::Classified`] with the public
//! `error_type`, likely causes, and the [`Contact`] the backend can prove.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::error::{Classified, Contact, DriverError, Transcript};
use crate::probe::{Answers, Budget, DebugProbe, ProbeInfo};
use crate::process::{self, Command, Exit};

/// Probe CLIs are chatty on failure but never need more than this per stream.
const OUTPUT_CAP: usize = 4 * 1024 * 1024;

/// One finished run with its decoded output.
#[derive(Debug, Clone)]
pub struct Ran {
    /// What the log keeps.
    pub transcript: Transcript,
    /// How it ended.
    pub exit: Exit,
}

impl Ran {
    /// stdout then stderr, as the classifiers read them.
    pub fn output(&self) -> String {
        format!("{}{}", self.transcript.stdout, self.transcript.stderr)
    }

    /// Whether the deadline or a cancel ended it.
    pub fn timed_out(&self) -> bool {
        matches!(self.exit, Exit::TimedOut | Exit::Cancelled)
    }

    /// The exit code when the child exited by itself.
    pub fn code(&self) -> Option<i32> {
        match self.exit {
            Exit::Code(code) => Some(code),
            _ => None,
        }
    }
}

/// Run `executable args…` in the executable's directory, with `min(limit, budget left)`.
///
/// A child that cannot be started is `debugger_not_found` with no contact: nothing ran.
pub fn run(
    executable: &Path,
    args: Vec<OsString>,
    limit: Duration,
    budget: &Budget,
    not_found_class: &'static str,
) -> Result<Ran, DriverError> {
    run_hearing(executable, args, limit, budget, not_found_class, None)
}

/// [`run`], with `hook` hearing each stdout line while the child runs.
pub fn run_hearing(
    executable: &Path,
    args: Vec<OsString>,
    limit: Duration,
    budget: &Budget,
    not_found_class: &'static str,
    hook: Option<process::LineHook>,
) -> Result<Ran, DriverError> {
    let mut command = Command::new(executable)
        .args(args)
        .deadline(budget.step(limit))
        .output_cap(OUTPUT_CAP)
        .cancel_on(budget.cancel_flag().clone());
    if let Some(hook) = hook {
        command = command.on_stdout_line(hook);
    }
    if let Some(dir) = process::own_directory(executable) {
        command = command.current_dir(dir);
    }
    let line = command.display_line();
    let finished = process::run(&command).map_err(|error| {
        DriverError::Classified(not_started(
            &error,
            not_found_class,
            vec![Transcript {
                command: line.clone(),
                ..Transcript::default()
            }],
        ))
    })?;
    let exit = finished.exit;
    Ok(Ran {
        transcript: Transcript {
            command: line,
            returncode: match exit {
                Exit::Code(code) => Some(code),
                _ => None,
            },
            timed_out: matches!(exit, Exit::TimedOut | Exit::Cancelled),
            stdout: finished.stdout_text(),
            stderr: finished.stderr_text(),
        },
        exit,
    })
}

/// The pinned executable could not be started (`error`): `debugger_not_executable`, with its
/// `not_executable_reason`, when the file is there and the host refuses to execute it, else
/// `debugger_not_found` as `not_found_class`. Either way nothing was spawned.
pub fn not_started(
    error: &std::io::Error,
    not_found_class: &'static str,
    transcripts: Vec<Transcript>,
) -> Box<Classified> {
    let contact = Contact::none("the debugger executable never started");
    let Some(reason) = process::not_executable_reason(error) else {
        return Box::new(Classified {
            error_type: "debugger_not_found",
            backend_error_type: not_found_class,
            summary: format!("The debugger executable could not be started ({error})."),
            likely_causes: vec![
                "the tool is not installed where the configuration points".into(),
                "the file is not executable".into(),
            ],
            contact,
            transcripts,
            details: Map::new(),
        });
    };
    let words = if reason == "permission_denied" {
        "refuses to execute it (permission denied)"
    } else {
        "cannot run it as a program (not an executable image)"
    };
    let mut details = Map::new();
    details.insert("not_executable_reason".into(), reason.into());
    Box::new(Classified {
        error_type: "debugger_not_executable",
        backend_error_type: reason,
        summary: format!(
            "The configured debugger executable is present and will not run: this host {words}."
        ),
        likely_causes: vec![
            "the file lost its execute bit, or lives on a noexec mount".into(),
            "the file is a script without a shebang, an archive, or a binary for another machine"
                .into(),
        ],
        contact,
        transcripts,
        details,
    })
}

/// Words that mark a line (or an output) as reporting a failure.
pub fn contains_failure_text(text: &str) -> bool {
    let lower = text.to_lowercase();
    ["error:", "failed", "failure", "mismatch"]
        .iter()
        .any(|word| lower.contains(word))
}

/// Whether `lower` contains any of `words`.
pub fn any(lower: &str, words: &[&str]) -> bool {
    words.iter().any(|word| lower.contains(word))
}

/// The string `key` of an entry in a backend's JSON listing; empty when it is absent or no string.
pub fn text(entry: &Value, key: &str) -> String {
    entry
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// A confirmed success.
#[derive(Debug, Clone, Default)]
pub struct CliSuccess {
    /// The runs, oldest first.
    pub transcripts: Vec<Transcript>,
    /// Failure-worded lines the backend printed before its success proof arrived.
    pub warnings: Vec<String>,
    /// The success text that proved the outcome.
    pub matched_success_text: Vec<String>,
}

/// What a listing found.
#[derive(Debug, Clone)]
pub struct Listing {
    /// The probes seen.
    pub probes: Vec<ProbeInfo>,
    /// Whether the listing is known to show every probe the backend could use.
    pub complete: bool,
    /// A note on how the list was made, for the agent.
    pub note: Option<String>,
    /// The runs, if any.
    pub transcripts: Vec<Transcript>,
}

impl Listing {
    /// What a backend that enumerates its probes itself found: every one it saw, by id, each with
    /// the same description.
    pub fn complete(ids: Vec<String>, description: &str, transcript: Transcript) -> Self {
        Self {
            probes: ids
                .into_iter()
                .map(|id| ProbeInfo {
                    id,
                    description: description.to_owned(),
                })
                .collect(),
            complete: true,
            note: None,
            transcripts: vec![transcript],
        }
    }
}

/// What every probe CLI answers: the child's transcripts (a listing, or a confirmed success).
#[derive(Debug, Clone, Copy)]
pub struct CliAnswers;

impl Answers for CliAnswers {
    type Listed = Listing;
    type Probed = CliSuccess;
    type Flashed = CliSuccess;
    type Reset = CliSuccess;
}

/// A probe CLI the gate can drive: a [`DebugProbe`] that answers [`CliAnswers`] (a name for that,
/// implemented by every such probe, not a second abstraction). Failures are classified.
pub trait CliProbe: DebugProbe<Answers = CliAnswers> {}

impl<T> CliProbe for T where T: DebugProbe<Answers = CliAnswers> {}

/// The common settings of a CLI backend.
#[derive(Debug, Clone)]
pub struct CliSettings {
    /// The pinned executable.
    pub executable: PathBuf,
    /// `probe_id` from the entry.
    pub probe_id: Option<String>,
    /// The entry's `timeout_s`.
    pub timeout: Duration,
}

impl CliSettings {
    /// [`run`] the pinned executable under the entry's timeout.
    pub fn run(
        &self,
        args: Vec<OsString>,
        budget: &Budget,
        not_found_class: &'static str,
    ) -> Result<Ran, DriverError> {
        run(
            &self.executable,
            args,
            self.timeout,
            budget,
            not_found_class,
        )
    }
}

/// The published meaning of a backend class: public `error_type`, summary, likely causes.
pub fn public(class: &'static str) -> Wording {
    match class {
        "openocd_not_found" | "pyocd_not_found" | "stm32_programmer_cli_not_found" => (
            "debugger_not_found",
            "The debugger executable could not be found.",
            &["the tool is not installed", "the configured path is wrong"],
        ),
        "adapter_not_found" | "probe_not_found" => (
            "adapter_not_found",
            "The debug probe (adapter) was not found or could not be opened.",
            &[
                "the probe is not plugged in",
                "another program holds the probe",
                "missing USB permissions (udev rules)",
                "the configured probe_id names another probe",
            ],
        ),
        "adapter_usb_error" => (
            "adapter_usb_error",
            "The debug probe enumerates, but its USB link refused communication.",
            &[
                "a debug server was killed while it held the probe's USB",
                "the USB cable or hub drops the link",
            ],
        ),
        "target_not_detected" => (
            "target_not_detected",
            "The probe opened but the target did not answer.",
            &[
                "DUT is not powered",
                "wrong interface configuration",
                "SWD/JTAG wiring issue",
                "debug probe already in use",
            ],
        ),
        "interface_config_not_found" | "target_config_not_found" | "config_file_not_found" => (
            "debugger_config_not_found",
            "The debugger could not find a script or file it was told to load.",
            &[
                "interface_cfg or target_cfg names a script this installation does not ship",
                "a path in the configuration is wrong",
            ],
        ),
        "command_rejected_before_init" => (
            "debugger_command_rejected",
            "The debugger rejected a command before it opened the probe.",
            &[
                "the OpenOCD version does not know the command",
                "a script redefined or removed a command",
            ],
        ),
        "probe_unconfirmed" => (
            "target_state_unconfirmed",
            "The debugger exited without printing the text that proves the target was reached.",
            &[
                "the backend's output format changed",
                "a script ended the run early",
            ],
        ),
        "flash_unconfirmed" | "flash_failed" => (
            "flash_failed",
            "Programming did not complete with a confirmed result.",
            &[
                "flash is write-protected or locked",
                "the image does not fit the target's flash",
                "the connection dropped during programming",
            ],
        ),
        "flash_erase_failed" => (
            "flash_erase_failed",
            "The programmer could not erase flash before writing.",
            &[
                "flash is write- or read-protected (option bytes)",
                "the address range is outside the device's flash",
                "the target reset or lost power during the erase",
            ],
        ),
        "verify_failed" => (
            "verify_failed",
            "The flash contents did not match the image after programming.",
            &[
                "flash wear or a failing sector",
                "the image overlaps a protected region",
                "the target ran and rewrote flash during verify",
            ],
        ),
        "reset_unconfirmed" | "reset_failed" => (
            "reset_failed",
            "The reset did not complete with a confirmed result.",
            &[
                "the reset line is not wired to the probe",
                "the target is held in reset or lost power",
            ],
        ),
        "memory_read_unconfirmed" => (
            "memory_read_failed",
            "The memory read did not complete with a confirmed result.",
            &[
                "the address range is not readable",
                "the target stopped answering",
            ],
        ),
        "target_type_invalid" => (
            "target_type_invalid",
            "pyOCD does not know the configured target type.",
            &[
                "the target type is misspelt",
                "the device needs a CMSIS pack that is not installed",
            ],
        ),
        "probe_discovery_failed" => (
            "probe_discovery_failed",
            "The backend could not list debug probes.",
            &[
                "the backend's output format changed",
                "USB enumeration failed",
            ],
        ),
        "timeout" => (
            "timeout",
            "Debugger command timed out.",
            &[
                "the probe or target stopped answering",
                "the timeout is too short for this operation",
            ],
        ),
        _ => (
            "unknown_debugger_error",
            "The debugger reported a failure this build does not recognise.",
            &["see the debugger output in driver_log"],
        ),
    }
}

/// Build a classified failure for `class`.
pub fn failure(
    class: &'static str,
    contact: Contact,
    transcripts: Vec<Transcript>,
) -> Box<Classified> {
    worded_failure(class, public(class), contact, transcripts)
}

/// A backend's words for a class: its public error type, summary and likely causes.
pub type Wording = (&'static str, &'static str, &'static [&'static str]);

/// Build a classified failure for `class` in a backend's own words (`public`'s answer, or a
/// backend's table such as esptool's).
pub fn worded_failure(
    class: &'static str,
    (error_type, summary, causes): Wording,
    contact: Contact,
    transcripts: Vec<Transcript>,
) -> Box<Classified> {
    Box::new(Classified {
        error_type,
        backend_error_type: class,
        summary: summary.to_owned(),
        likely_causes: causes.iter().map(|c| (*c).to_owned()).collect(),
        contact,
        transcripts,
        details: Map::new(),
    })
}

/// The verdict on a run that exited cleanly with no failure words: a success when `output` holds
/// every `expected` sentence (case-insensitively), else the `unconfirmed` failure in `wording`'s
/// words, listing what was expected and what was seen. Contact is possible: the tool ran.
pub fn confirm(
    output: &str,
    expected: &[&str],
    unconfirmed: &'static str,
    wording: fn(&'static str) -> Wording,
    transcripts: Vec<Transcript>,
) -> Result<CliSuccess, DriverError> {
    let lower = output.to_lowercase();
    let matched: Vec<String> = expected
        .iter()
        .filter(|text| lower.contains(&text.to_lowercase()))
        .map(|text| (*text).to_owned())
        .collect();
    if matched.len() == expected.len() {
        return Ok(CliSuccess {
            transcripts,
            warnings: Vec::new(),
            matched_success_text: matched,
        });
    }
    let failed = worded_failure(
        unconfirmed,
        wording(unconfirmed),
        Contact::Possible,
        transcripts,
    );
    Err(DriverError::Classified(with_detail(
        failed,
        "operation_result",
        json!({"confirmed": false, "expected_success_text": expected, "matched_success_text": matched}),
    )))
}

/// A failure with one extra detail.
pub fn with_detail(mut failure: Box<Classified>, key: &str, value: Value) -> Box<Classified> {
    failure.details.insert(key.to_owned(), value);
    failure
}

/// The `not_supported` answer for an operation a backend does not offer.
pub fn not_supported(summary: &str, details: Map<String, Value>) -> DriverError {
    DriverError::Classified(Box::new(Classified {
        error_type: "not_supported",
        backend_error_type: "not_supported",
        summary: summary.to_owned(),
        likely_causes: Vec::new(),
        contact: Contact::none("refused before anything ran"),
        transcripts: Vec::new(),
        details,
    }))
}

/// The refusal of a `.bin` image without a base address on a backend that needs one.
pub fn bin_needs_address(product: &str) -> DriverError {
    DriverError::Classified(Box::new(Classified {
        error_type: "invalid_argument",
        backend_error_type: "invalid_argument",
        summary: format!(
            "Flashing .bin artifacts with {product} requires debuggers.<name>.flash_address."
        ),
        likely_causes: Vec::new(),
        contact: Contact::none("refused before anything ran"),
        transcripts: Vec::new(),
        details: Map::new(),
    }))
}

/// Lines with failure words, in order, trimmed.
pub fn failure_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && contains_failure_text(line))
        .map(str::to_owned)
        .collect()
}

/// The transcripts as one text, for logs.
pub fn log_text(transcripts: &[Transcript]) -> String {
    transcripts
        .iter()
        .map(|t| {
            format!(
                "$ {}\n[returncode {:?}{}]\n{}{}",
                t.command,
                t.returncode,
                if t.timed_out { ", timed out" } else { "" },
                t.stdout,
                t.stderr
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The timeout failure: the contact is what the collected output proves, per backend.
pub fn timed_out(ran: Ran, contact: Contact) -> DriverError {
    DriverError::Classified(failure("timeout", contact, vec![ran.transcript]))
}

/// How a run reads before the backend's own success words are checked.
#[derive(Debug)]
pub enum Reading {
    /// Exit 0, no failure class and no failure words: the backend confirms it from its own proof.
    Clean(Ran),
    /// A failure of the run's class, with the contact the output proves.
    Failed(Ran, Contact),
}

/// The first reading of a run of `class`: no contact when the backend's own words (`pre_contact`, in
/// `proof`) say it opened nothing, else possible; a timeout fails at once with that contact.
pub fn read(
    ran: Ran,
    output: &str,
    class: &str,
    pre_contact: bool,
    proof: &'static str,
) -> Result<Reading, DriverError> {
    let contact = if pre_contact {
        Contact::none(proof)
    } else {
        Contact::Possible
    };
    if ran.timed_out() {
        return Err(timed_out(ran, contact));
    }
    if ran.code() == Some(0) && class == "unknown_debugger_error" && !contains_failure_text(output)
    {
        return Ok(Reading::Clean(ran));
    }
    Ok(Reading::Failed(ran, contact))
}

#[cfg(test)]
#[path = "probe_cli_tests.rs"]
mod tests;

/// The scripted fake CLIs of `ahil-sim`, installed into a private directory per test.
#[cfg(test)]
pub(crate) mod fake {
    use std::ffi::OsString;
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    use super::{CliProbe, CliSettings, CliSuccess};
    use crate::error::{Classified, Contact, DriverError};
    use crate::openocd::gdbserver::ServerError;
    use crate::probe::{Budget, FlashRequest, ImageFormat, ResetMode};

    /// The classified failure inside `error`; anything else fails the test.
    pub fn classified(error: DriverError) -> Box<Classified> {
        match error {
            DriverError::Classified(c) => c,
            other => panic!("expected a classified failure, got {other:?}"),
        }
    }

    /// A verified flash of `image`, reset to run after it when `reset`.
    pub fn flash_request(image: &str, format: ImageFormat, reset: bool) -> FlashRequest {
        FlashRequest {
            image: image.into(),
            format,
            verify: true,
            reset: reset.then_some(ResetMode::Run),
        }
    }

    /// A verified flash of `/s/fw.elf` with no reset after, under a minute's budget: the flash
    /// most failure scenarios answer.
    pub fn flash_elf(probe: &impl CliProbe) -> Result<CliSuccess, DriverError> {
        probe.flash(
            &flash_request("/s/fw.elf", ImageFormat::Elf, false),
            &Budget::new(Duration::from_mins(1)),
        )
    }

    /// A fake installed under a tool's name, and the backend a test drives over it.
    pub struct Fake<P> {
        /// `openocd.py`, `pyocd.py`, `STM32_Programmer_CLI.py` or `esptool.py`.
        pub name: &'static str,
        pub backend: fn(&Path) -> P,
    }

    impl<P> Fake<P> {
        /// What `act` fails with on the backend over the fake playing `scenario`.
        pub fn failure_on<T: std::fmt::Debug>(
            &self,
            scenario: &str,
            act: impl FnOnce(&P) -> Result<T, DriverError>,
        ) -> Box<Classified> {
            let (_dir, exe) = install(self.name, scenario);
            classified(act(&(self.backend)(&exe)).expect_err(scenario))
        }
    }

    impl<P: CliProbe> Fake<P> {
        /// Checks that with the target absent (the fake playing `scenario`) the read-only probe
        /// fails as `target_not_detected` and proves no contact, while `write`, which may have
        /// reached the target, cannot; returns what `write` failed with.
        pub fn assert_absent_target<T: std::fmt::Debug>(
            &self,
            scenario: &str,
            write: impl FnOnce(&P) -> Result<T, DriverError>,
        ) -> Box<Classified> {
            let read = self.failure_on(scenario, |probe| {
                probe.probe(&Budget::new(Duration::from_mins(1)))
            });
            assert_eq!(read.error_type, "target_not_detected");
            assert!(matches!(read.contact, Contact::None { .. }), "{read:?}");
            let written = self.failure_on(scenario, write);
            assert_eq!(written.contact, Contact::Possible);
            written
        }
    }

    /// An argument list as text, for comparing with literals.
    pub fn strings(argv: &[OsString]) -> Vec<String> {
        argv.iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    /// A `/bin/sh` script `name` running `body`, executable, alone in a new temporary directory.
    pub fn install_sh(name: &str, body: &str) -> (tempfile::TempDir, PathBuf) {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("script");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        (dir, path)
    }

    /// A gdb server `name` that writes its pid to `pid` beside itself and never opens its port.
    pub fn install_server_never_ready(name: &str) -> (tempfile::TempDir, PathBuf) {
        install_sh(name, "echo $$ > \"$(dirname \"$0\")/pid\"; exec sleep 30")
    }

    /// Checks that a start of the server [`install_server_never_ready`] put in `dir` was refused
    /// as not ready, and that the server is gone.
    pub fn assert_not_ready_and_gone(error: &ServerError, dir: &Path) {
        assert!(matches!(error, ServerError::NotReady(..)), "{error:?}");
        let pid = read_pid(&dir.join("pid"));
        assert!(!alive(pid), "the server {pid} is gone");
    }

    /// The pid a fake wrote to `file`.
    pub fn read_pid(file: &Path) -> i32 {
        std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()))
            .trim()
            .parse()
            .expect("a pid")
    }

    /// Checks that every process whose pid a hung fake wrote to `pid_files` in `dir` is gone, and
    /// with them the process group the first of them led.
    pub fn assert_reaped(dir: &Path, pid_files: &[&str]) {
        for file in pid_files {
            let pid = read_pid(&dir.join(file));
            assert!(!alive(pid), "{file} {pid} survived");
        }
        let leader = read_pid(&dir.join(pid_files[0]));
        assert!(
            group_members(leader).is_empty(),
            "the process group {leader} is gone"
        );
    }

    /// The version `exe` reports as `backend`'s tool, asked with ten seconds to answer.
    pub fn version_of(backend: crate::Backend, exe: &Path) -> String {
        crate::debugger_version(backend, exe, Duration::from_secs(10), None)
            .expect("version")
            .version
    }

    /// The fake script in the source tree.
    pub fn script() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../ahil-sim/src/fakes/probe_cli.py")
    }

    /// A fake named `name` (`openocd.py`, `pyocd.py`, `STM32_Programmer_CLI.py`) playing `scenario`.
    pub fn install(name: &str, scenario: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("temp dir");
        let exe = dir.path().join(name);
        std::fs::copy(script(), &exe).expect("copy fake");
        std::fs::write(dir.path().join("fake-scenario"), scenario).expect("scenario");
        (dir, exe)
    }

    /// Settings over `exe`.
    pub fn settings(exe: &Path, probe_id: Option<&str>, timeout: Duration) -> CliSettings {
        CliSettings {
            executable: exe.to_path_buf(),
            probe_id: probe_id.map(str::to_owned),
            timeout,
        }
    }

    /// The argument lists the fake was called with, in order.
    pub fn calls(dir: &Path) -> Vec<Vec<String>> {
        std::fs::read_to_string(dir.join("calls.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).expect("call line"))
            .collect()
    }

    /// Live (non-zombie) processes whose process group is `pgid`.
    pub fn group_members(pgid: i32) -> Vec<i32> {
        crate::process::group_members(pgid).unwrap_or_default()
    }

    /// Whether a process with this pid still exists (a zombie counts as gone).
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
}
