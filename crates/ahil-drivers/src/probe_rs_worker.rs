//! The `probe-rs-worker` side of [`crate::probe_rs`]: parse one request, run it with the probe-rs
//! library, print progress lines and one answer line, exit. It runs in a child of the server, so
//! whatever probe-rs does to this process (a USB call that never returns, a panic) ends here.
//!
//! Each failure says how far it got ([`Reached`]): a misspelt chip or a missing probe is found before
//! any debug port is driven, which is what lets the gate call a retry safe.

use std::io::Write;

use serde_json::json;

use crate::probe_rs::{Answer, Reached, Request};

/// Run the worker with the arguments after the subcommand name; returns the exit code. Out of line:
/// inlined into the binary's command dispatch, its frame would be entered (and probed) by every
/// command, the MCP server's start included.
#[inline(never)]
pub fn main(args: &[String]) -> i32 {
    let request = match parse_args(args) {
        Ok(request) => request,
        Err(message) => {
            emit_answer(&Answer::failure("invalid_request", Reached::None, message));
            return 2;
        }
    };
    test_seam();
    let answer = run(&request);
    emit_answer(&answer);
    i32::from(!answer.ok)
}

/// `--request <json>` and nothing else.
pub fn parse_args(args: &[String]) -> Result<Request, String> {
    match args {
        [flag, line] if flag == "--request" => {
            serde_json::from_str(line).map_err(|e| format!("the request is not valid: {e}"))
        }
        _ => Err("usage: probe-rs-worker --request <json>".to_owned()),
    }
}

/// Test builds only ([`ahil_wire::TEST_SEAMS`]): let the black-box tests make the worker hang or crash, the two failures a
/// real USB stack produces that no test machine can trigger on demand, or report a stage in words
/// the test chose (`stage:<words>`: what a leaky library might print, for the output-sink test).
fn test_seam() {
    if !ahil_wire::TEST_SEAMS {
        return;
    }
    match std::env::var("AHIL_TEST_PROBE_RS_WORKER").as_deref() {
        Ok("hang") => loop {
            std::thread::sleep(std::time::Duration::from_hours(1));
        },
        Ok("panic") => panic!("simulated probe-rs worker crash"),
        Ok(seam) => {
            if let Some(words) = seam.strip_prefix("stage:") {
                emit_line(&serde_json::json!({ "stage": words }).to_string());
            }
        }
        Err(_) => {}
    }
}

fn emit_answer(answer: &Answer) {
    let line = serde_json::to_string(answer).unwrap_or_else(|_| {
        r#"{"ok":false,"class":"unknown","reached":"possible","message":"unencodable answer"}"#
            .to_owned()
    });
    emit_line(&line);
}

fn emit_line(line: &str) {
    let mut out = std::io::stdout().lock();
    // A closed pipe means the server gave up on us; nothing is left to tell it.
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Report a stage as it starts, so a timeout's transcript shows how far the action got.
pub fn emit_stage(stage: &str) {
    emit_line(&json!({"stage": stage}).to_string());
}

#[cfg(not(feature = "probe-rs"))]
fn run(_request: &Request) -> Answer {
    Answer::failure(
        "not_built",
        Reached::None,
        "this build has no probe-rs backend (feature `probe-rs` was off)",
    )
}

#[cfg(feature = "probe-rs")]
fn run(request: &Request) -> Answer {
    native::run(request)
}

/// What the worker would answer to `line`, in this process (tests of the worker's own decisions).
#[cfg(all(test, feature = "probe-rs"))]
pub(crate) fn run_for_test(line: &str) -> Answer {
    match parse_args(&["--request".to_owned(), line.to_owned()]) {
        Ok(request) => run(&request),
        Err(message) => Answer::failure("invalid_request", Reached::None, message),
    }
}

/// A dry-run flash of `image` against probe-rs's own fake probe: the image is loaded and laid out
/// over `target`'s flash map, and nothing is programmed.
#[cfg(all(test, feature = "probe-rs"))]
pub(crate) fn dry_run_flash_on_fake_probe(
    target: &crate::probe_rs::TargetRef,
    image: &str,
    format: crate::probe_rs::Format,
    base: Option<u64>,
) -> Answer {
    native::with_session_on(
        target,
        || Ok(probe_rs::probe::fake_probe::FakeProbe::with_mocked_core().into_probe()),
        |session| {
            let image = native::Image {
                path: image,
                format,
                base,
            };
            native::flash(session, &image, true, None, true)
        },
    )
}

/// `probe` against probe-rs's own fake probe with a mocked Cortex-M core (no USB involved).
#[cfg(all(test, feature = "probe-rs"))]
pub(crate) fn with_fake_probe(target: &crate::probe_rs::TargetRef) -> Answer {
    native::with_session_on(
        target,
        || Ok(probe_rs::probe::fake_probe::FakeProbe::with_mocked_core().into_probe()),
        native::probe,
    )
}

#[cfg(feature = "probe-rs")]
mod native {
    use std::time::Duration;

    use probe_rs::config::Registry;
    use probe_rs::flashing::{
        self, BinLoader, BinOptions, DownloadOptions, ElfLoader, ElfOptions, FileDownloadError,
        FlashError, FlashProgress, HexLoader, ProgressEvent, ProgressOperation,
    };
    use probe_rs::probe::list::Lister;
    use probe_rs::probe::{Probe, WireProtocol};
    use probe_rs::{Core, CoreStatus, MemoryInterface, Permissions, Session};
    use serde_json::{Map, Value, json};

    use super::emit_stage;
    use crate::probe_rs::{Answer, Format, Reached, Request, TargetRef};

    /// Wrap `data` as a success.
    fn done(message: &str, data: Value) -> Answer {
        let data = match data {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        Answer::success(message, data)
    }

    /// How long a halt after reset may take before the reset counts as failed.
    const HALT_WAIT: Duration = Duration::from_millis(500);
    /// The largest read one request may ask for (symbol values are small).
    const READ_MAX: u32 = 4096;

    pub(super) fn run(request: &Request) -> Answer {
        match request {
            Request::List => list(),
            Request::Probe { target } => with_session(target, probe),
            Request::Reset { target, mode } => {
                let halt = match mode.as_str() {
                    "run" => false,
                    "halt" => true,
                    _ => {
                        return Answer::failure(
                            "invalid_request",
                            Reached::None,
                            "mode is run or halt",
                        );
                    }
                };
                with_session(target, |session| reset(session, halt))
            }
            Request::Read {
                target,
                address,
                length,
            } => {
                if *length == 0 || *length > READ_MAX {
                    return Answer::failure(
                        "invalid_request",
                        Reached::None,
                        format!("length is 1 to {READ_MAX} bytes"),
                    );
                }
                with_session(target, |session| read(session, *address, *length))
            }
            Request::Memory { target } => with_session(target, serve_memory),
            Request::Flash {
                target,
                image,
                format,
                base,
                verify,
                reset,
            } => {
                let after = match reset.as_deref() {
                    None => None,
                    Some("run") => Some(false),
                    Some("halt") => Some(true),
                    Some(_) => {
                        return Answer::failure(
                            "invalid_request",
                            Reached::None,
                            "reset is run or halt",
                        );
                    }
                };
                with_session(target, |session| {
                    let image = Image {
                        path: image,
                        format: *format,
                        base: *base,
                    };
                    flash(session, &image, *verify, after, false)
                })
            }
        }
    }

    fn list() -> Answer {
        let probes: Vec<_> = Lister::new()
            .list_all()
            .iter()
            .map(|info| {
                json!({
                    "serial": info.serial_number.clone().unwrap_or_default(),
                    "description": info.identifier,
                    "usb": format!("{:04x}:{:04x}", info.vendor_id, info.product_id),
                })
            })
            .collect();
        // Without sysfs's USB tree (a container, a chroot) probe-rs sees nothing and says so only in
        // its log, so an empty list there proves nothing.
        let complete = std::path::Path::new("/sys/bus/usb/devices").is_dir();
        done(
            &format!("{} probe(s) found", probes.len()),
            json!({"probes": probes, "complete": complete}),
        )
    }

    /// Check the chip, open the probe, attach without reset, then run `action`.
    fn with_session(target: &TargetRef, action: impl FnOnce(&mut Session) -> Answer) -> Answer {
        with_session_on(target, || open_probe(target.probe.as_deref()), action)
    }

    /// [`with_session`] on a probe from `open`, so tests can attach probe-rs's own fake probe.
    pub(super) fn with_session_on(
        target: &TargetRef,
        open: impl FnOnce() -> Result<Probe, Box<Answer>>,
        action: impl FnOnce(&mut Session) -> Answer,
    ) -> Answer {
        let registry = Registry::from_builtin_families();
        let chip = match registry.get_target_by_name(&target.chip) {
            Ok(chip) => chip,
            Err(error) => {
                return Answer::failure("target_type_invalid", Reached::None, error.to_string());
            }
        };
        let protocol = match target.protocol.as_str() {
            "jtag" => WireProtocol::Jtag,
            _ => WireProtocol::Swd,
        };
        emit_stage("open_probe");
        let mut probe = match open() {
            Ok(probe) => probe,
            Err(answer) => return *answer,
        };
        if let Err(error) = probe.select_protocol(protocol) {
            return Answer::failure("adapter_not_found", Reached::None, error.to_string());
        }
        emit_stage("attach");
        let mut session = match probe.attach_with_registry(chip, Permissions::default(), &registry)
        {
            Ok(session) => session,
            Err(error) => {
                return Answer::failure(
                    "target_not_detected",
                    Reached::Possible,
                    error.to_string(),
                );
            }
        };
        action(&mut session)
    }

    fn open_probe(serial: Option<&str>) -> Result<Probe, Box<Answer>> {
        let seam = std::env::var("AHIL_TEST_PROBE_RS_WORKER").ok();
        match seam.filter(|_| ahil_wire::TEST_SEAMS) {
            Some(seam) if seam == "fake" => {
                return Ok(probe_rs::probe::fake_probe::FakeProbe::with_mocked_core().into_probe());
            }
            // The mocked core's memory is this ELF's loadable segments (zero elsewhere; writes
            // are dropped): what lets the RTT path be read end to end without a probe.
            Some(seam) if seam.starts_with("fake-elf:") => {
                let elf = std::path::Path::new(&seam["fake-elf:".len()..]);
                return Ok(
                    probe_rs::probe::fake_probe::FakeProbe::with_mocked_core_and_binary(elf)
                        .into_probe(),
                );
            }
            _ => {}
        }
        let lister = Lister::new();
        let found = lister.list_all();
        let chosen = found
            .iter()
            .find(|info| serial.is_none_or(|want| info.serial_number.as_deref() == Some(want)));
        let Some(info) = chosen else {
            let message = match serial {
                Some(want) => format!(
                    "no probe with serial {want} among {} probe(s) found",
                    found.len()
                ),
                None => "no debug probe was found on USB".to_owned(),
            };
            return Err(Box::new(Answer::failure(
                "adapter_not_found",
                Reached::None,
                message,
            )));
        };
        info.open().map_err(|error| {
            Box::new(Answer::failure(
                "adapter_not_found",
                Reached::None,
                error.to_string(),
            ))
        })
    }

    fn status_name(status: CoreStatus) -> &'static str {
        match status {
            CoreStatus::Running | CoreStatus::Sleeping => "running",
            CoreStatus::Halted(_) => "halted",
            CoreStatus::LockedUp => "locked_up",
            CoreStatus::Unknown => "unknown",
        }
    }

    /// The first core, or the refusal every operation gives when the target does not answer: the
    /// attach may have touched it, so contact is possible.
    fn core_zero(session: &mut Session) -> Result<Core<'_>, Box<Answer>> {
        session.core(0).map_err(|error| {
            Box::new(Answer::failure(
                "target_not_detected",
                Reached::Possible,
                error.to_string(),
            ))
        })
    }

    pub(super) fn probe(session: &mut Session) -> Answer {
        let chip = session.target().name.clone();
        let mut core = match core_zero(session) {
            Ok(core) => core,
            Err(refused) => return *refused,
        };
        match core.status() {
            Ok(status) => done(
                &format!("attached to {chip}; core 0 is {}", status_name(status)),
                json!({"chip": chip, "core_state": status_name(status)}),
            ),
            Err(error) => {
                Answer::failure("target_not_detected", Reached::Possible, error.to_string())
            }
        }
    }

    fn reset(session: &mut Session, halt: bool) -> Answer {
        emit_stage("reset");
        let mut core = match core_zero(session) {
            Ok(core) => core,
            Err(refused) => return *refused,
        };
        let result = if halt {
            core.reset_and_halt(HALT_WAIT).map(|_| ())
        } else {
            core.reset()
        };
        match result {
            Ok(()) => {
                let state = if halt { "halted" } else { "running" };
                done(
                    &format!("core 0 reset, {state}"),
                    json!({"core_state": state}),
                )
            }
            Err(error) => Answer::failure("reset_failed", Reached::Made, error.to_string()),
        }
    }

    fn read(session: &mut Session, address: u64, length: u32) -> Answer {
        let mut core = match core_zero(session) {
            Ok(core) => core,
            Err(refused) => return *refused,
        };
        let mut bytes = vec![0_u8; length as usize];
        match core.read_8(address, &mut bytes) {
            Ok(()) => done(
                &format!("read {length} byte(s)"),
                json!({"address": address, "bytes": bytes}),
            ),
            Err(error) => {
                Answer::failure("memory_read_unconfirmed", Reached::Made, error.to_string())
            }
        }
    }

    /// The core's memory as the memory server's loop sees it. RTT's offsets are aligned words and
    /// written as one 32-bit access each, so the target never sees half an offset.
    struct CoreMemory<'a>(Core<'a>);

    impl crate::probe_rs_memory::TargetMemory for CoreMemory<'_> {
        fn read(&mut self, address: u64, buf: &mut [u8]) -> Result<(), String> {
            self.0
                .read_8(address, buf)
                .map_err(|error| error.to_string())
        }

        fn write(&mut self, address: u64, data: &[u8]) -> Result<(), String> {
            let result = match <[u8; 4]>::try_from(data) {
                Ok(word) if address.is_multiple_of(4) => {
                    self.0.write_word_32(address, u32::from_le_bytes(word))
                }
                _ => self.0.write_8(address, data),
            };
            result.map_err(|error| error.to_string())
        }
    }

    /// The chip's RAM and flash ranges, which the gate confines RTT's reads and writes to.
    fn regions(session: &Session) -> crate::probe_rs_memory::Regions {
        use probe_rs::config::MemoryRegion;
        let mut regions = crate::probe_rs_memory::Regions::default();
        for region in &session.target().memory_map {
            match region {
                MemoryRegion::Ram(ram) => regions.ram.push((ram.range.start, ram.range.end)),
                MemoryRegion::Nvm(nvm) => regions.nvm.push((nvm.range.start, nvm.range.end)),
                MemoryRegion::Generic(_) => {}
            }
        }
        regions
    }

    /// Say the attach worked (with the memory map), then serve memory until stdin closes. The core
    /// is never halted: RTT needs none (crate::rtt).
    fn serve_memory(session: &mut Session) -> Answer {
        let regions = regions(session);
        let core = match core_zero(session) {
            Ok(core) => core,
            Err(refused) => return *refused,
        };
        super::emit_answer(&done(
            "attached; serving memory",
            json!({"regions": regions}),
        ));
        let stdin = std::io::stdin();
        crate::probe_rs_memory::serve(&mut CoreMemory(core), stdin.lock(), super::emit_line);
        done("stdin closed; detached", json!({}))
    }

    /// An image as the request names it.
    pub(super) struct Image<'a> {
        pub(super) path: &'a str,
        pub(super) format: Format,
        pub(super) base: Option<u64>,
    }

    /// Program `image`; `dry_run` (tests only) stops after probe-rs has laid the image out over the
    /// chip's flash, before anything is erased.
    pub(super) fn flash(
        session: &mut Session,
        image: &Image<'_>,
        verify: bool,
        reset_after: Option<bool>,
        dry_run: bool,
    ) -> Answer {
        let Image {
            path: image,
            format,
            base,
        } = *image;
        let mut options = DownloadOptions::default();
        options.verify = verify;
        options.dry_run = dry_run;
        options.progress = FlashProgress::new(|event| {
            if let ProgressEvent::Started(operation) = event {
                emit_stage(match operation {
                    ProgressOperation::Fill => "fill",
                    ProgressOperation::Erase => "erase",
                    ProgressOperation::Program => "download",
                    ProgressOperation::Verify => "verify",
                });
            }
        });
        let result = match format {
            Format::Elf => flashing::download_file_with_options(
                session,
                image,
                ElfLoader(ElfOptions::default()),
                options,
            ),
            Format::Hex => flashing::download_file_with_options(session, image, HexLoader, options),
            Format::Bin => {
                let bin = BinOptions {
                    base_address: base,
                    ..BinOptions::default()
                };
                flashing::download_file_with_options(session, image, BinLoader(bin), options)
            }
        };
        if let Err(error) = result {
            let (class, reached) = match &error {
                FileDownloadError::Flash(FlashError::Verify) => ("verify_failed", Reached::Made),
                FileDownloadError::Flash(
                    FlashError::EraseFailed { .. } | FlashError::ChipEraseFailed { .. },
                ) => ("flash_erase_failed", Reached::Made),
                FileDownloadError::Flash(_) => ("flash_failed", Reached::Made),
                // The image could not be read or decoded: nothing was sent to the chip yet.
                _ => ("flash_failed", Reached::Possible),
            };
            return Answer::failure(class, reached, error.to_string());
        }
        let state = match reset_after {
            None => "unknown",
            Some(halt) => {
                let answer = reset(session, halt);
                if !answer.ok {
                    return answer;
                }
                if halt { "halted" } else { "running" }
            }
        };
        done(
            &format!(
                "image programmed{}",
                if verify { " and verified" } else { "" }
            ),
            json!({"verified": verify, "core_state": state}),
        )
    }
}
