//! A simulated RS-3005P bench supply on a pty: it answers the unit's serial protocol from a kept
//! state, and can be told to misbehave the ways a real unit does (lie about a set point, keep its
//! output off, fall silent after a write, never answer, report another identity).
//!
//! `agentic-hil psu-sim --link PATH [--mode M] [--idn TEXT] [--journal FILE]` links the pty's
//! slave at PATH, prints PATH, and serves until its stdin closes. Every command it receives is
//! appended to the journal, so a test can prove what reached the "unit".

use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ahil_drivers::psu::Fixed;
use serialport::{SerialPort, TTYPort};

/// The identity a verified unit reports.
pub const DEFAULT_IDN: &str = "RS-3005P V6.9 SN:03682957";
/// A command without its newline ends after this much silence (the unit's own framing).
const COMMAND_GAP: Duration = Duration::from_millis(50);

/// How the simulated unit behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Answers every query truthfully.
    Normal,
    /// Applies writes, but reports every written set point one step low.
    LieReadback,
    /// Applies the first write, then never answers again.
    SilentAfterWrite,
    /// Never answers anything.
    Silent,
    /// Takes `OUT1` but keeps its output off, as a unit whose protection has tripped does.
    OutputStuckOff,
}

impl Mode {
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "normal" => Self::Normal,
            "lie-readback" => Self::LieReadback,
            "silent-after-write" => Self::SilentAfterWrite,
            "silent" => Self::Silent,
            "output-stuck-off" => Self::OutputStuckOff,
            _ => return None,
        })
    }
}

/// The unit's state.
#[derive(Debug, Clone)]
pub struct Unit {
    pub mode: Mode,
    pub idn: String,
    /// Set points in 10 mV and 1 mA steps.
    pub set_v: u64,
    pub set_a: u64,
    pub output_on: bool,
    /// Whether a written set point is reported falsely.
    lied: bool,
    silent: bool,
}

impl Unit {
    pub fn new(mode: Mode, idn: &str) -> Self {
        Self {
            mode,
            idn: idn.to_owned(),
            set_v: 500,
            set_a: 1000,
            output_on: false,
            lied: false,
            silent: mode == Mode::Silent,
        }
    }

    /// The answer to one command (newline included), or `None` for a command that answers nothing.
    pub fn answer(&mut self, command: &str) -> Option<Vec<u8>> {
        if self.silent {
            return None;
        }
        let volts = |units: u64| {
            let text = Fixed { units, places: 2 }.render();
            format!("{text:0>5}")
        };
        let amps = |units: u64| Fixed { units, places: 3 }.render();
        let reported_v = if self.lied {
            self.set_v.saturating_sub(1)
        } else {
            self.set_v
        };
        let line = match command {
            "*IDN?" => self.idn.clone(),
            "VSET1?" => volts(reported_v),
            "ISET1?" => amps(self.set_a),
            "VOUT1?" => volts(if self.output_on { self.set_v } else { 0 }),
            // A board drawing 42 mA, or less when the current limit is lower.
            "IOUT1?" => amps(if self.output_on {
                self.set_a.min(42)
            } else {
                0
            }),
            "STATUS?" => {
                let byte = 0x01 | if self.output_on { 0x40 } else { 0 };
                return Some(vec![byte, b'\n']);
            }
            _ => {
                self.apply(command);
                return None;
            }
        };
        Some(format!("{line}\n").into_bytes())
    }

    fn apply(&mut self, command: &str) {
        let changed = if let Some(v) = command.strip_prefix("VSET1:") {
            Fixed::parse(v, 2).map(|f| self.set_v = f.units).is_some()
        } else if let Some(a) = command.strip_prefix("ISET1:") {
            Fixed::parse(a, 3).map(|f| self.set_a = f.units).is_some()
        } else if command == "OUT1" || command == "OUT0" {
            self.output_on = command == "OUT1" && self.mode != Mode::OutputStuckOff;
            true
        } else {
            false
        };
        if changed {
            match self.mode {
                Mode::LieReadback if command.starts_with("VSET") => self.lied = true,
                Mode::SilentAfterWrite => self.silent = true,
                _ => {}
            }
        }
    }
}

/// Splits received bytes into commands: at a newline, or (no terminator) at a pause.
#[derive(Debug, Default)]
pub struct Framer {
    partial: Vec<u8>,
}

impl Framer {
    /// The complete commands in `bytes`.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        let mut done = Vec::new();
        for &byte in bytes {
            if byte == b'\n' || byte == b'\r' {
                done.extend(self.flush());
            } else {
                self.partial.push(byte);
            }
        }
        done
    }

    /// What was received before a pause, as one command.
    pub fn flush(&mut self) -> Option<String> {
        if self.partial.is_empty() {
            return None;
        }
        let text = String::from_utf8_lossy(&self.partial).trim().to_owned();
        self.partial.clear();
        (!text.is_empty()).then_some(text)
    }
}

struct Settings {
    link: PathBuf,
    mode: Mode,
    idn: String,
    journal: Option<PathBuf>,
}

fn parse_args(args: &[String]) -> Result<Settings, String> {
    let mut link = None;
    let mut mode = Mode::Normal;
    let mut idn = DEFAULT_IDN.to_owned();
    let mut journal = None;
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value"))?
            .clone();
        match flag.as_str() {
            "--link" => link = Some(PathBuf::from(value)),
            "--mode" => {
                mode = Mode::parse(&value).ok_or_else(|| format!("unknown mode {value}"))?;
            }
            "--idn" => idn = value,
            "--journal" => journal = Some(PathBuf::from(value)),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(Settings {
        link: link.ok_or("--link PATH is required")?,
        mode,
        idn,
        journal,
    })
}

/// The simulator's entry point; returns the exit code.
pub fn main(args: &[String]) -> i32 {
    let settings = match parse_args(args) {
        Ok(s) => s,
        Err(why) => {
            eprintln!("psu-sim: {why}");
            return 2;
        }
    };
    match serve(&settings) {
        Ok(()) => 0,
        Err(why) => {
            eprintln!("psu-sim: {why}");
            1
        }
    }
}

fn serve(settings: &Settings) -> Result<(), String> {
    let (mut master, slave) = TTYPort::pair().map_err(|e| format!("no pty: {e}"))?;
    let slave_name = slave.name().ok_or("the pty has no name")?;
    let _ = std::fs::remove_file(&settings.link);
    std::os::unix::fs::symlink(&slave_name, &settings.link)
        .map_err(|e| format!("cannot link {}: {e}", settings.link.display()))?;
    // Stop when whoever started us closes our stdin (or dies).
    let stop = Arc::new(AtomicBool::new(false));
    std::thread::spawn({
        let stop = Arc::clone(&stop);
        move || {
            let mut sink = [0u8; 64];
            while std::io::stdin().read(&mut sink).is_ok_and(|n| n > 0) {}
            stop.store(true, Ordering::SeqCst);
        }
    });
    println!("{}", settings.link.display());
    let _ = std::io::stdout().flush();
    master.set_timeout(COMMAND_GAP).map_err(|e| e.to_string())?;
    let mut unit = Unit::new(settings.mode, &settings.idn);
    let mut framer = Framer::default();
    let mut buf = [0u8; 256];
    // The slave stays open here so a client's close never hangs the pty up.
    let _slave = slave;
    while !stop.load(Ordering::SeqCst) {
        let commands = match master.read(&mut buf) {
            Ok(0) => Vec::new(),
            Ok(n) => framer.push(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                framer.flush().into_iter().collect()
            }
            Err(e) => return Err(format!("pty read failed: {e}")),
        };
        for command in commands {
            journal(settings.journal.as_ref(), &command);
            if let Some(reply) = unit.answer(&command) {
                master
                    .write_all(&reply)
                    .map_err(|e| format!("pty write failed: {e}"))?;
            }
        }
    }
    let _ = std::fs::remove_file(&settings.link);
    Ok(())
}

fn journal(path: Option<&PathBuf>, command: &str) {
    if let Some(path) = path
        && let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
    {
        let _ = writeln!(file, "{command}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unit_keeps_what_it_was_told_and_reports_it_in_its_own_format() {
        let mut unit = Unit::new(Mode::Normal, DEFAULT_IDN);
        assert_eq!(unit.answer("VSET1?"), Some(b"05.00\n".to_vec()));
        assert_eq!(unit.answer("VSET1:3.30"), None);
        assert_eq!(unit.answer("ISET1:0.250"), None);
        assert_eq!(unit.answer("VSET1?"), Some(b"03.30\n".to_vec()));
        assert_eq!(unit.answer("ISET1?"), Some(b"0.250\n".to_vec()));
        assert_eq!(unit.answer("STATUS?"), Some(vec![0x01, b'\n']));
        unit.answer("OUT1");
        assert_eq!(unit.answer("STATUS?"), Some(vec![0x41, b'\n']));
        assert_eq!(unit.answer("VOUT1?"), Some(b"03.30\n".to_vec()));
    }

    #[test]
    fn a_lying_unit_reports_a_written_voltage_one_step_low() {
        let mut unit = Unit::new(Mode::LieReadback, DEFAULT_IDN);
        assert_eq!(unit.answer("VSET1?"), Some(b"05.00\n".to_vec()));
        unit.answer("VSET1:3.30");
        assert_eq!(unit.answer("VSET1?"), Some(b"03.29\n".to_vec()));
    }

    #[test]
    fn a_unit_silent_after_a_write_still_applies_that_write() {
        let mut unit = Unit::new(Mode::SilentAfterWrite, DEFAULT_IDN);
        assert!(unit.answer("*IDN?").is_some());
        unit.answer("OUT1");
        assert!(unit.output_on);
        assert_eq!(unit.answer("STATUS?"), None);
    }

    #[test]
    fn a_unit_with_its_output_stuck_off_takes_out1_and_stays_off() {
        let mut unit = Unit::new(Mode::OutputStuckOff, DEFAULT_IDN);
        assert_eq!(unit.answer("OUT1"), None);
        assert_eq!(unit.answer("STATUS?"), Some(vec![0x01, b'\n']));
    }

    #[test]
    fn commands_are_framed_by_newlines_or_by_a_pause() {
        let mut framer = Framer::default();
        assert_eq!(framer.push(b"*IDN?\nVSET1?\r\nVSE"), ["*IDN?", "VSET1?"]);
        assert_eq!(framer.push(b"T1:1.00"), Vec::<String>::new());
        assert_eq!(framer.flush().as_deref(), Some("VSET1:1.00"));
    }
}
