//! Symbol reads without a session, for ST-Link (STM32CubeProgrammer has no gdb server) and probe-rs:
//! the symbol is resolved offline in the ELF that a confirmed `flash_firmware` on this probe last
//! wrote, and its bytes are read through the programmer into Intel HEX and parsed back, or through
//! the probe-rs worker without halting the core.
//!
//! The flash records a private copy of the ELF and its digest under the state root, per probe (its
//! lock key), so the symbols come from what the board runs, not from whatever the workspace holds now.
//! A flash of a HEX or BIN image drops the record: the board no longer runs a known ELF.

use crate::ErrorType;
use crate::catalogue::ToolId;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ahil_config::{Debugger, ExecutableState, Interface};
use ahil_drivers::cubeprog::{ConnectMode, CubeProg};
use ahil_drivers::error::{Classified, Transcript};
use ahil_drivers::probe::Budget;
use ahil_drivers::probe_cli::CliSettings;
use ahil_drivers::probe_rs::ProbeRs;
use ahil_drivers::process::{self, Command, Exit};
use ahil_drivers::{Contact, DriverError};
use serde_json::{Map, Value, json};

use super::elfsym;
use super::output::Output;
use crate::actions::{Acted, Context, DriverJob, Work};
use crate::artifacts::{Format, StagedArtifact};
use crate::envelope::{HardwareState, Outcome, SideEffectStatus};
use crate::ownership::runs::debugger_keys;
use crate::snapshot::pinned_debugger_executable;

/// gdb's offline symbol query waits 30 s at most.
const GDB_MAX: Duration = Duration::from_secs(30);
/// The gate's margin over the job's own waits.
const MARGIN: Duration = Duration::from_secs(5);
const ADDRESS_MARK: &str = "AHIL_SYMBOL_ADDRESS=";
const SIZE_MARK: &str = "AHIL_SYMBOL_SIZE=";

/// Where a probe's flashed ELF is kept: one directory per lock key under the state root.
#[derive(Debug, Clone)]
pub struct Record {
    dir: PathBuf,
}

impl Record {
    /// The record of the probe behind `lock_key`.
    pub fn new(state_root: &Path, lock_key: &str) -> Self {
        let id = ahil_config::digest::sha256_hex(lock_key.as_bytes());
        Self {
            dir: state_root.join("debug").join("flashed").join(&id[..16]),
        }
    }

    /// The record of a debugger entry, keyed as its device lock is.
    pub fn for_debugger(state_root: &Path, debugger: &Debugger, executable: Option<&Path>) -> Self {
        Self::new(state_root, &debugger_keys(debugger, executable)[0])
    }

    fn elf(&self) -> PathBuf {
        self.dir.join("image.elf")
    }

    fn meta(&self) -> PathBuf {
        self.dir.join("record.json")
    }

    /// Records what a confirmed flash wrote: the ELF's copy and digest, or, for another format, that
    /// no ELF describes the board any more.
    pub fn flashed(&self, staged: &StagedArtifact) -> std::io::Result<()> {
        if staged.format() != Some(Format::Elf) {
            return match std::fs::remove_file(self.meta()) {
                Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(error),
                _ => Ok(()),
            };
        }
        let bytes = std::fs::read(staged.path())?;
        crate::fsio::create_dir_all_private(&self.dir, 0o700)?;
        // The metadata goes last: a record is complete once it names the digest.
        let _ = std::fs::remove_file(self.meta());
        crate::fsio::write_atomic(&self.elf(), &bytes, 0o600)?;
        let meta = json!({
            "path": staged.display_path(),
            "sha256": staged.sha256(),
            "flashed_at": ahil_config::time::now_millis(),
        });
        crate::fsio::write_atomic(&self.meta(), meta.to_string().as_bytes(), 0o600)
    }

    /// The recorded ELF's bytes and its description, once its digest is checked.
    pub(crate) fn load(&self, tool: ToolId) -> Result<(Vec<u8>, Value), Box<Acted>> {
        let meta: Option<Value> = std::fs::read(self.meta())
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok());
        let Some(meta) = meta else {
            return Err(quiet(
                Outcome::refused(
                    tool,
                    ErrorType::SymbolSourceNotAvailable,
                    "No ELF is on record for this probe: flash one with flash_firmware first.",
                )
                .with_causes([
                    "nothing was flashed through this probe since the state root was created",
                    "the last flash wrote a HEX or BIN image, which carries no symbols",
                ])
                .with_next_step("Call flash_firmware with the ELF the board should run."),
            ));
        };
        let source = json!({"path": meta["path"], "sha256": meta["sha256"]});
        match std::fs::read(self.elf()) {
            Ok(bytes)
                if meta["sha256"].as_str()
                    == Some(ahil_config::digest::sha256_hex(&bytes).as_str()) =>
            {
                Ok((bytes, source))
            }
            _ => Err(quiet(
                Outcome::refused(
                    tool,
                    ErrorType::SymbolSourceChanged,
                    "The recorded copy of the flashed ELF no longer matches its digest, so its symbols are not used.",
                )
                .with("symbol_source", source)
                .with_next_step("Flash the ELF again with flash_firmware, then read the symbol."),
            )),
        }
    }
}

fn quiet(outcome: Outcome) -> Box<Acted> {
    Box::new(Acted::new(
        outcome,
        Contact::none("answered before the probe was opened"),
    ))
}

/// A C identifier or a `::`-qualified C++ name; nothing gdb would evaluate as an expression.
fn plain_symbol(name: &str) -> bool {
    !name.is_empty()
        && name.split("::").all(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

/// What reads the symbol's bytes.
enum Reader {
    Programmer(CubeProg),
    ProbeRs(ProbeRs),
}

impl Reader {
    fn backend(&self) -> &'static str {
        match self {
            Self::Programmer(_) => "stlink",
            Self::ProbeRs(_) => "probe-rs",
        }
    }
}

/// The work of `debug_symbol_info` (resolved only, nothing read), `debug_symbol_value` or
/// `debug_dump_symbol_ihex` on an ST-Link or probe-rs entry.
pub fn work<'a>(
    ctx: &'a Context<'a>,
    tool: ToolId,
    name: &str,
    debugger: &Debugger,
) -> Result<Work<'a>, Box<Outcome>> {
    let config = &ctx.loaded.config;
    let symbol = ctx
        .args
        .get("symbol")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if !plain_symbol(&symbol) {
        return Err(Box::new(
            Outcome::refused(
                tool,
                ErrorType::InvalidArgument,
                "symbol must be a valid C/C++ identifier.",
            )
            .not_contacted(),
        ));
    }
    let output = if tool == ToolId::DebugDumpSymbolIhex {
        let text = ctx
            .args
            .get("output_path")
            .and_then(Value::as_str)
            .unwrap_or_default();
        Some(super::output::check(tool.name(), config, text)?)
    } else {
        None
    };
    let executable = pinned_debugger_executable(ctx.loaded, name);
    let probe_rs = debugger.kind == ahil_config::DebuggerType::ProbeRs;
    let Some(program) = executable.clone() else {
        let (product, remedy) = if probe_rs {
            (
                "probe-rs worker",
                "The worker is this binary; reinstall agentic-hil, then restart the server.",
            )
        } else {
            (
                "STM32_Programmer_CLI",
                "Install STM32CubeProgrammer, or name it in `debuggers.<name>.executable`, then restart the server.",
            )
        };
        return Err(Box::new(
            Outcome::refused(
                tool,
                ErrorType::DebuggerNotFound,
                format!("No {product} is available for this debugger, so memory cannot be read."),
            )
            .with("backend", debugger.kind.as_str())
            .with_remediation([remedy])
            .not_contacted(),
        ));
    };
    let timeout = Duration::try_from_secs_f64(debugger.timeout_s).unwrap_or(Duration::from_mins(1));
    let settings = CliSettings {
        executable: program,
        probe_id: debugger.probe_id.clone(),
        timeout,
    };
    let protocol = match debugger.interface {
        Interface::Swd => "SWD",
        Interface::Jtag => "JTAG",
    };
    let reader = if probe_rs {
        Reader::ProbeRs(ProbeRs::new(
            settings,
            debugger.target_type.as_deref(),
            if protocol == "SWD" { "swd" } else { "jtag" },
        ))
    } else {
        Reader::Programmer(CubeProg::new(settings, protocol, ConnectMode::Hotplug))
    };
    let gdb = match &ctx.loaded.executables.gdb {
        Some(ExecutableState::Pinned { path }) => Some(path.clone()),
        _ => None,
    };
    let read = Read {
        tool,
        symbol,
        record: Record::for_debugger(&config.state_root, debugger, executable.as_deref()),
        gdb,
        gdb_limit: timeout.min(GDB_MAX),
        reader,
        timeout,
        max_dump: config.debug.max_dump_size_bytes,
        output,
    };
    Ok(Work::Driver(DriverJob {
        deadline: read.gdb_limit + timeout + MARGIN,
        if_abandoned: Contact::Possible,
        run: Box::new(move |cancel| read.run(cancel)),
    }))
}

/// One offline symbol read, owned for the blocking job.
struct Read {
    tool: ToolId,
    symbol: String,
    record: Record,
    gdb: Option<PathBuf>,
    gdb_limit: Duration,
    reader: Reader,
    timeout: Duration,
    max_dump: u64,
    output: Option<Output>,
}

impl Read {
    fn run(self, cancel: process::CancelFlag) -> Acted {
        let tool = self.tool;
        let (elf, source) = match self.record.load(tool) {
            Ok(found) => found,
            Err(refused) => return *refused,
        };
        let Ok(private) = Scratch::new() else {
            return *quiet(Outcome::refused(
                tool,
                ErrorType::SymbolResolutionFailed,
                "No private directory could be made for the symbol query.",
            ));
        };
        let (address, size, resolved_from) = match self.resolve(&elf, private.path()) {
            Ok(found) => found,
            Err(refused) => return *refused,
        };
        let mut outcome = Outcome::ok(tool, format!("Symbol `{}` read.", self.symbol))
            .with("backend", self.reader.backend())
            .with("symbol", self.symbol.as_str())
            .with("address", format!("0x{address:x}"))
            .with("address_value", address)
            .with("size_bytes", size)
            .with("resolved_from", resolved_from)
            .with("symbol_source", source);
        if tool == ToolId::DebugSymbolInfo {
            "Symbol resolved.".clone_into(&mut outcome.summary);
            return *quiet(read_only(outcome));
        }
        if size > self.max_dump {
            return *quiet(
                Outcome::refused(
                    tool,
                    ErrorType::PermissionDenied,
                    "Symbol read/dump exceeds debug.max_dump_size_bytes.",
                )
                .with("symbol", self.symbol.as_str())
                .with("size_bytes", size)
                .with("max_dump_size_bytes", self.max_dump)
                .with("permission", "debug.max_dump_size_bytes"),
            );
        }
        let bytes = if size == 0 {
            Vec::new()
        } else {
            match self.read_memory(address, size, private.path(), cancel) {
                Ok(bytes) => bytes,
                Err(acted) => return *acted,
            }
        };
        if let Some(output) = &self.output {
            if let Err(why) = output.write(&super::ihex::write(address, &bytes)) {
                return Acted {
                    outcome: read_only(Outcome::refused(
                        tool,
                        ErrorType::OutputWriteFailed,
                        format!("The memory was read but the dump could not be written: {why}."),
                    ))
                    .with("symbol", self.symbol.as_str()),
                    contact: Some(Contact::Made),
                };
            }
            "Symbol memory dumped as Intel HEX.".clone_into(&mut outcome.summary);
            outcome = outcome.with(
                "output",
                json!({"path": output.display, "resolved_path": output.display}),
            );
        } else if let Value::Object(decoded) = super::decode(&bytes, super::byte_order(&elf)) {
            for (key, value) in decoded {
                outcome.set(&key, value);
            }
        }
        Acted::new(read_only(outcome), Contact::Made)
    }

    /// Address and size from gdb's debug info, else from the ELF's symbol table.
    fn resolve(&self, elf: &[u8], dir: &Path) -> Result<(u64, u64, &'static str), Box<Acted>> {
        let tool = self.tool;
        let gdb_said = match &self.gdb {
            Some(gdb) => self.ask_gdb(gdb, elf, dir)?,
            None => String::new(),
        };
        let marked = |mark: &str| {
            gdb_said.lines().find_map(|line| {
                let digits = line.trim().strip_prefix(mark)?;
                digits.parse::<u64>().ok()
            })
        };
        if let (Some(address), Some(size)) = (marked(ADDRESS_MARK), marked(SIZE_MARK)) {
            return Ok((address, size, "debug_info"));
        }
        match elfsym::lookup(elf, &self.symbol) {
            Ok((address, size)) => Ok((address, size, "elf_symbol_table")),
            Err(miss) => {
                let lower = gdb_said.to_lowercase();
                let (error_type, summary) = if matches!(miss, elfsym::Miss::NotFound)
                    && (self.gdb.is_none()
                        || lower.contains("no symbol")
                        || lower.contains("not defined"))
                {
                    (
                        "symbol_not_found",
                        format!("The flashed ELF has no symbol `{}`.", self.symbol),
                    )
                } else {
                    (
                        "symbol_resolution_failed",
                        format!(
                            "The address and size of `{}` could not be resolved from the flashed ELF.",
                            self.symbol
                        ),
                    )
                };
                Err(quiet(
                    Outcome::refused(tool, ErrorType::layer(error_type), summary)
                        .with("symbol", self.symbol.as_str())
                        .with("symbol_table_lookup", miss.reason()),
                ))
            }
        }
    }

    /// gdb's `--batch` answer for the symbol's address and size (its output, whatever it said).
    fn ask_gdb(&self, gdb: &Path, elf: &[u8], dir: &Path) -> Result<String, Box<Acted>> {
        let copy = dir.join("symbols.elf");
        if std::fs::write(&copy, elf).is_err() {
            return Err(quiet(Outcome::refused(
                self.tool,
                ErrorType::SymbolResolutionFailed,
                "The flashed ELF could not be copied for gdb.",
            )));
        }
        let symbol = &self.symbol;
        let command = Command::new(gdb)
            .args(["--batch", "-q"])
            .args(ahil_drivers::gdbmi::session::GDB_START_OPTIONS)
            .arg("-ex")
            .arg(format!(
                "printf \"{ADDRESS_MARK}%lu\\n\", (unsigned long)&{symbol}"
            ))
            .arg("-ex")
            .arg(format!(
                "printf \"{SIZE_MARK}%lu\\n\", (unsigned long)sizeof({symbol})"
            ))
            .arg(&copy)
            .deadline(self.gdb_limit)
            .output_cap(64 * 1024);
        match process::run(&command) {
            Ok(done) if done.exit == Exit::TimedOut => Err(quiet(
                Outcome::refused(
                    self.tool,
                    ErrorType::Timeout,
                    "gdb did not resolve the symbol in time.",
                )
                .with("symbol", symbol.as_str()),
            )),
            Ok(done) => Ok(format!("{}{}", done.stdout_text(), done.stderr_text())),
            // gdb that cannot start leaves the symbol table.
            Err(_) => Ok(String::new()),
        }
    }

    /// The `size` bytes at `address`: through the programmer's Intel HEX, or from the worker.
    fn read_memory(
        &self,
        address: u64,
        size: u64,
        dir: &Path,
        cancel: process::CancelFlag,
    ) -> Result<Vec<u8>, Box<Acted>> {
        let tool = self.tool;
        let budget = Budget::new(self.timeout).with_cancel(cancel);
        let backend = self.reader.backend();
        let programmer = match &self.reader {
            Reader::Programmer(programmer) => programmer,
            Reader::ProbeRs(probe) => {
                // The dump limit keeps a symbol far below 4 GiB.
                let length = u32::try_from(size).unwrap_or(u32::MAX);
                return probe
                    .read_memory(address, length, &budget)
                    .map_err(|error| Box::new(failed(tool, backend, error)));
            }
        };
        let file = dir.join("symbol-value.hex");
        if let Err(error) = programmer.read_memory_hex(address, size, &file, &budget) {
            return Err(Box::new(failed(tool, backend, error)));
        }
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        super::ihex::read(&text, address, size).map_err(|why| {
            Box::new(Acted {
                outcome: read_only(
                    Outcome::refused(
                        tool,
                        ErrorType::MemoryReadFailed,
                        "STM32CubeProgrammer confirmed the read but left no Intel HEX covering the requested bytes.",
                    )
                    .with("symbol", self.symbol.as_str())
                    .with("hex_problem", why.to_string()),
                ),
                contact: Some(Contact::Made),
            })
        })
    }
}

/// A private directory in the system temp dir for one read (the ELF copy gdb reads, the programmer's
/// HEX), removed with everything in it when the read ends. It is made fresh with mode 0700, so no
/// other user can plant or read a file in it.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> std::io::Result<Self> {
        use std::os::unix::fs::DirBuilderExt as _;
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = Path::new(crate::artifacts::SYSTEM_TEMP).join(format!(
            "ahil-symbol-{}-{}-{nanos}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        Ok(Self(dir))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A read changes nothing on the target, whatever it answered.
fn read_only(mut outcome: Outcome) -> Outcome {
    outcome.side_effect_committed = Some(false);
    outcome.side_effect_status = Some(SideEffectStatus::NotStarted);
    outcome.hardware_state = Some(HardwareState::Unchanged);
    outcome.retry_safe = Some(true);
    outcome
}

/// A backend's classified failure as the start of its refusal (class, summary, causes), with the
/// rest of its evidence for the caller to judge.
pub(crate) struct ClassifiedRefusal {
    pub outcome: Outcome,
    pub contact: Contact,
    pub transcripts: Vec<Transcript>,
    pub details: Map<String, Value>,
}

/// `error` as the refusal of `tool` on `backend`: an unclassified error is the whole answer
/// (`Err`), with the contact it proves.
pub(crate) fn classified_refusal(
    tool: ToolId,
    backend: &str,
    error: DriverError,
) -> Result<ClassifiedRefusal, Box<Acted>> {
    let classified: Box<Classified> = match error {
        DriverError::Classified(classified) => classified,
        other => {
            let contact = other.contact();
            return Err(Box::new(Acted {
                outcome: Outcome::refused(
                    tool,
                    ErrorType::layer(other.error_type()),
                    format!("{other}."),
                )
                .with("backend", backend),
                contact: Some(contact),
            }));
        }
    };
    let Classified {
        error_type,
        backend_error_type,
        summary,
        likely_causes,
        contact,
        transcripts,
        details,
    } = *classified;
    Ok(ClassifiedRefusal {
        outcome: Outcome::refused(tool, ErrorType::layer(error_type), summary)
            .with("backend", backend)
            .with("backend_error_type", backend_error_type)
            .with_causes(likely_causes),
        contact,
        transcripts,
        details,
    })
}

/// The reader's classified failure as an envelope.
fn failed(tool: ToolId, backend: &str, error: DriverError) -> Acted {
    let ClassifiedRefusal {
        mut outcome,
        contact,
        transcripts,
        details,
    } = match classified_refusal(tool, backend, error) {
        Ok(refusal) => refusal,
        Err(acted) => return *acted,
    };
    for (key, value) in details {
        outcome.set(&key, value);
    }
    if !transcripts.is_empty() {
        outcome.set(
            "driver_log",
            ahil_drivers::probe_cli::log_text(&transcripts),
        );
    }
    // A failed read leaves the target as it was, but a programmer that got as far as the target
    // leaves the probe's state to be checked; only a provable no-contact is retry-safe.
    Acted {
        outcome,
        contact: Some(match contact {
            Contact::None { .. } => contact,
            _ => Contact::Possible,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_identifiers_reach_gdb() {
        for good in ["counter", "_g", "ns::value", "A1_b"] {
            assert!(plain_symbol(good), "{good}");
        }
        for bad in ["", "1a", "a.b", "a[0]", "a)", "ns::", "::a", "a b", "&x"] {
            assert!(!plain_symbol(bad), "{bad}");
        }
    }

    #[test]
    fn each_probe_keeps_its_own_record() {
        let root = Path::new("/state");
        assert_eq!(
            Record::new(root, "probe:a").dir,
            Record::new(root, "probe:a").dir
        );
        assert_ne!(
            Record::new(root, "probe:a").dir,
            Record::new(root, "probe:b").dir
        );
    }

    /// A worker script that logs its request and answers `answer`.
    fn worker(dir: &Path, answer: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("worker");
        let log = dir.join("request.json");
        std::fs::write(
            &path,
            format!(
                "#!/bin/sh\nprintf '%s' \"$3\" > '{}'\necho '{answer}'\n",
                log.display()
            ),
        )
        .expect("worker");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path
    }

    fn probe_rs_firmware() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../firmware/build/ahil-fw-v1.elf")
    }

    /// A read of `symbol` through a probe-rs worker, with the test firmware's ELF on record.
    fn probe_rs_read(dir: &Path, symbol: &str, worker: PathBuf) -> Read {
        let record = Record::new(dir, "probe-rs:test");
        let elf = std::fs::read(probe_rs_firmware()).expect("the committed firmware");
        std::fs::create_dir_all(&record.dir).expect("record dir");
        std::fs::write(record.elf(), &elf).expect("elf");
        let meta =
            json!({"path": "fw/ahil-fw-v1.elf", "sha256": ahil_config::digest::sha256_hex(&elf)});
        std::fs::write(record.meta(), meta.to_string()).expect("meta");
        let timeout = Duration::from_secs(10);
        Read {
            tool: ToolId::DebugSymbolValue,
            symbol: symbol.to_owned(),
            record,
            gdb: None,
            gdb_limit: timeout,
            reader: Reader::ProbeRs(ProbeRs::new(
                CliSettings {
                    executable: worker,
                    probe_id: None,
                    timeout,
                },
                Some("STM32F405RGTx"),
                "swd",
            )),
            timeout,
            max_dump: 4096,
            output: None,
        }
    }

    #[test]
    fn probe_rs_reads_a_symbol_of_the_flashed_elf_through_its_worker() {
        let dir = tempfile::tempdir().expect("tempdir");
        let worker = worker(
            dir.path(),
            r#"{"ok":true,"message":"read 4 byte(s)","data":{"bytes":[239,190,173,222]}}"#,
        );
        let acted = probe_rs_read(dir.path(), "g_u32", worker).run(process::CancelFlag::default());
        let outcome = acted.outcome.to_value();
        assert_eq!(outcome["ok"], true, "{outcome}");
        assert_eq!(outcome["backend"], "probe-rs");
        assert_eq!(outcome["value_unsigned"], 0xDEAD_BEEF_u64);
        assert_eq!(outcome["resolved_from"], "elf_symbol_table");
        assert!(matches!(acted.contact, Some(Contact::Made)));
        let elf = std::fs::read(probe_rs_firmware()).expect("elf");
        let (address, size) = elfsym::lookup(&elf, "g_u32").expect("g_u32");
        let request: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("request.json")).expect("request"),
        )
        .expect("json request");
        assert_eq!(request["op"], "read", "{request}");
        assert_eq!(request["address"], address, "{request}");
        assert_eq!(request["length"], size, "{request}");
    }

    #[test]
    fn a_probe_rs_read_that_finds_no_probe_is_retry_safe_and_names_the_backend() {
        let dir = tempfile::tempdir().expect("tempdir");
        let worker = worker(
            dir.path(),
            r#"{"ok":false,"class":"adapter_not_found","reached":"none","message":"no debug probe was found on USB"}"#,
        );
        let acted = probe_rs_read(dir.path(), "g_u32", worker).run(process::CancelFlag::default());
        let outcome = acted.outcome.to_value();
        assert_eq!(outcome["error_type"], "adapter_not_found", "{outcome}");
        assert_eq!(outcome["backend"], "probe-rs");
        assert!(matches!(acted.contact, Some(Contact::None { .. })));
    }

    #[test]
    fn a_script_the_flashed_elf_names_never_runs_in_the_gdb_that_resolves_its_symbols() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let mark = dir.path().join("script-ran");
        // A gdb that trusts every path for auto-load, as a build without a safe path does.
        let gdb = dir.path().join("trusting-gdb");
        std::fs::write(
            &gdb,
            "#!/bin/sh\nexec /usr/bin/gdb-multiarch -iex 'set auto-load safe-path /' \"$@\"\n",
        )
        .expect("gdb");
        std::fs::set_permissions(&gdb, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let section = dir.path().join("scripts.bin");
        let script = format!("open({:?}, 'w').write('ran')\n", mark.display().to_string());
        std::fs::write(
            &section,
            [b"\x04gdb.inlined-script\n", script.as_bytes(), b"\0"].concat(),
        )
        .expect("section");
        let scripted = dir.path().join("scripted.elf");
        let made = std::process::Command::new("/usr/bin/arm-none-eabi-objcopy")
            .arg("--add-section")
            .arg(format!(".debug_gdb_scripts={}", section.display()))
            .args(["--set-section-flags", ".debug_gdb_scripts=readonly,debug"])
            .arg(probe_rs_firmware())
            .arg(&scripted)
            .status()
            .expect("objcopy runs");
        assert!(made.success());
        let worker = worker(
            dir.path(),
            r#"{"ok":true,"message":"read 4 byte(s)","data":{"bytes":[239,190,173,222]}}"#,
        );
        let mut read = probe_rs_read(dir.path(), "g_u32", worker);
        let elf = std::fs::read(&scripted).expect("scripted elf");
        std::fs::write(read.record.elf(), &elf).expect("elf on record");
        let meta =
            json!({"path": "fw/scripted.elf", "sha256": ahil_config::digest::sha256_hex(&elf)});
        std::fs::write(read.record.meta(), meta.to_string()).expect("meta");
        read.gdb = Some(gdb);
        let outcome = read.run(process::CancelFlag::default()).outcome.to_value();
        assert_eq!(
            outcome["resolved_from"], "debug_info",
            "gdb resolved it: {outcome}"
        );
        assert!(!mark.exists(), "the ELF's script ran inside gdb");
    }
}
