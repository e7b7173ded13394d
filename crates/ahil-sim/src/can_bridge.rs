//! A CAN bridge simulator speaking protocol v2 on stdin/stdout, as a `can_buses.<id>.executable` of
//! `adapter: process` is run. Behind it sits a small ECU:
//!
//! - a request on `0x7E0` is answered on `0x7E8` with the first byte plus `0x40` and the rest echoed
//!   (the shape of a diagnostic positive response);
//! - `0x100` is sent every `--period-ms` (default 100; 0 turns it off) with an 8-byte counter;
//! - a frame on `0x7DF` with two bytes `n` (big-endian) queues a burst of `n` frames on `0x200`
//!   carrying their sequence number, for throughput measurements.
//!
//! `--mode` (or `AHIL_CAN_SIM_MODE`) makes it misbehave: `silent` (never answers), `no-listen-only`
//! (opens without echoing listen-only), `crash-open` (dies on open), `crash-session` (dies on the
//! first send), `refuse-open` (refuses before going on the bus), `refuse-on-bus` (refuses after its
//! channel went on the bus), `send-fails` (refuses every send), `bad-frames` (answers reads with a
//! malformed frame).

use std::collections::VecDeque;
use std::io::{BufRead, Write};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use ahil_drivers::can::Frame;
use serde_json::{Value, json};

/// ECU identifiers.
pub const REQUEST_ID: u32 = 0x7E0;
pub const RESPONSE_ID: u32 = 0x7E8;
pub const PERIODIC_ID: u32 = 0x100;
pub const BURST_TRIGGER_ID: u32 = 0x7DF;
pub const BURST_ID: u32 = 0x200;
/// Frames the simulated controller holds before it drops (as a real one overruns).
const SIM_QUEUE: usize = 1 << 20;

/// How the simulator misbehaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Normal,
    Silent,
    NoListenOnly,
    CrashOpen,
    CrashSession,
    RefuseOpen,
    RefuseOnBus,
    SendFails,
    BadFrames,
}

impl Mode {
    pub fn parse(word: &str) -> Option<Self> {
        Some(match word {
            "normal" => Self::Normal,
            "silent" => Self::Silent,
            "no-listen-only" => Self::NoListenOnly,
            "crash-open" => Self::CrashOpen,
            "crash-session" => Self::CrashSession,
            "refuse-open" => Self::RefuseOpen,
            "refuse-on-bus" => Self::RefuseOnBus,
            "send-fails" => Self::SendFails,
            "bad-frames" => Self::BadFrames,
            _ => return None,
        })
    }
}

/// The simulator's settings.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    pub mode: Mode,
    pub period: Duration,
}

/// Settings from arguments (`--mode M`, `--period-ms N`), then the environment.
pub fn settings(args: &[String]) -> Result<Settings, String> {
    let mut mode = std::env::var("AHIL_CAN_SIM_MODE").unwrap_or_else(|_| "normal".into());
    let mut period_ms = std::env::var("AHIL_CAN_SIM_PERIOD_MS").unwrap_or_else(|_| "100".into());
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--mode" => mode.clone_from(rest.next().ok_or("--mode needs a value")?),
            "--period-ms" => period_ms.clone_from(rest.next().ok_or("--period-ms needs a value")?),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(Settings {
        mode: Mode::parse(&mode).ok_or_else(|| format!("unknown mode {mode}"))?,
        period: Duration::from_millis(
            period_ms
                .parse()
                .map_err(|_| format!("--period-ms {period_ms} is not a number"))?,
        ),
    })
}

#[derive(Default)]
struct Rx {
    frames: VecDeque<Frame>,
    open: bool,
    closed: bool,
}

struct Bus {
    rx: Mutex<Rx>,
    arrived: Condvar,
}

impl Bus {
    fn rx(&self) -> std::sync::MutexGuard<'_, Rx> {
        self.rx.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(&self, frames: impl IntoIterator<Item = Frame>) {
        let mut rx = self.rx();
        for frame in frames {
            if rx.frames.len() < SIM_QUEUE {
                rx.frames.push_back(frame);
            }
        }
        drop(rx);
        self.arrived.notify_all();
    }
}

fn frame(id: u32, data: Vec<u8>) -> Frame {
    Frame::new(u64::from(id), false, false, data).expect("the ECU's identifiers are 11-bit")
}

/// What the ECU answers to a frame it received.
fn ecu_reply(sent: &Frame) -> Vec<Frame> {
    match sent.id {
        REQUEST_ID if !sent.extended && !sent.rtr => {
            let mut data = sent.data.clone();
            if let Some(first) = data.first_mut() {
                *first = first.wrapping_add(0x40);
            }
            vec![frame(RESPONSE_ID, data)]
        }
        BURST_TRIGGER_ID if sent.data.len() >= 2 => {
            let n = u32::from(u16::from_be_bytes([sent.data[0], sent.data[1]]));
            (0..n)
                .map(|seq| frame(BURST_ID, seq.to_be_bytes().to_vec()))
                .collect()
        }
        _ => Vec::new(),
    }
}

fn periodic(bus: &Bus, period: Duration) {
    let mut counter: u64 = 0;
    let mut next = Instant::now() + period;
    loop {
        thread::sleep(next.saturating_duration_since(Instant::now()));
        next += period;
        let rx = bus.rx();
        if rx.closed {
            return;
        }
        let open = rx.open;
        drop(rx);
        if open {
            counter += 1;
            bus.push([frame(PERIODIC_ID, counter.to_be_bytes().to_vec())]);
        }
    }
}

/// Run the simulator on this process's stdin and stdout; answers the exit code.
pub fn main(args: &[String]) -> i32 {
    let settings = match settings(args) {
        Ok(settings) => settings,
        Err(error) => {
            eprintln!("ahil-can-bridge-sim: {error}");
            return 2;
        }
    };
    let stdin = std::io::stdin().lock();
    serve(settings, stdin, Box::new(std::io::stdout()))
}

/// Where answers go; shared by the main loop and the reads that wait for frames.
type Output = Arc<Mutex<Box<dyn Write + Send>>>;

fn answer(output: &Output, line: &Value) -> bool {
    let mut out = output.lock().unwrap_or_else(PoisonError::into_inner);
    writeln!(out, "{line}").is_ok() && out.flush().is_ok()
}

/// Serve protocol v2 until `close`, end of input, or a simulated crash. A read that has to wait for
/// frames waits on its own thread, so a send arriving meanwhile is answered at once (as a bridge in
/// front of a real controller would).
pub fn serve(settings: Settings, input: impl BufRead, output: Box<dyn Write + Send>) -> i32 {
    let output: Output = Arc::new(Mutex::new(output));
    let bus = Arc::new(Bus {
        rx: Mutex::new(Rx::default()),
        arrived: Condvar::new(),
    });
    if !settings.period.is_zero() {
        let bus = Arc::clone(&bus);
        thread::spawn(move || periodic(&bus, settings.period));
    }
    // Reads that must wait for a frame are answered in order by one waiter thread: the pump asks
    // about a hundred times a second, and a thread started for each ask cost the machine's two
    // cores more than the gate being measured beside it.
    let waiting = {
        let (tx, rx) = std::sync::mpsc::channel::<(Value, Value)>();
        let (bus, output) = (Arc::clone(&bus), Arc::clone(&output));
        let mode = settings.mode;
        thread::spawn(move || {
            for (id, params) in rx {
                let result = read(&bus, &params, mode);
                answer(&output, &json!({"id": id, "result": result}));
            }
        });
        tx
    };
    let mut own_echo = false;
    for line in input.lines() {
        let Ok(line) = line else { break };
        let Ok(request) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        let params = request.get("params").cloned().unwrap_or_else(|| json!({}));
        let method = request.get("method").and_then(Value::as_str).unwrap_or("");
        if settings.mode == Mode::Silent {
            continue;
        }
        let result = match method {
            "open" => {
                if settings.mode == Mode::CrashOpen {
                    eprintln!("simulated crash during open");
                    return 3;
                }
                if settings.mode == Mode::RefuseOpen {
                    json!({"ok": false, "error_type": "can_channel_not_available", "summary": "The simulated channel is not available.", "channel_open": false})
                } else if settings.mode == Mode::RefuseOnBus {
                    json!({"ok": false, "error_type": "can_adapter_open_failed", "summary": "The simulated controller failed after joining the bus.", "channel_open": true})
                } else {
                    own_echo = params.get("receive_own_messages") == Some(&Value::Bool(true));
                    bus.rx().open = true;
                    let mut result = json!({"ok": true, "protocol_version": 2, "backend": "ahil-can-bridge-sim", "summary": "Simulated channel open."});
                    if params.get("listen_only") == Some(&Value::Bool(true))
                        && settings.mode != Mode::NoListenOnly
                    {
                        result["listen_only"] = true.into();
                    }
                    result
                }
            }
            "send" => {
                if settings.mode == Mode::CrashSession {
                    eprintln!("simulated crash during a session");
                    return 3;
                }
                match params.get("frame").and_then(Frame::from_bridge) {
                    _ if settings.mode == Mode::SendFails => {
                        json!({"ok": false, "error_type": "can_send_failed", "summary": "The simulated controller is bus-off."})
                    }
                    Some(sent) => {
                        let mut frames = Vec::new();
                        if own_echo {
                            frames.push(sent.clone());
                        }
                        frames.extend(ecu_reply(&sent));
                        bus.push(frames);
                        json!({"ok": true})
                    }
                    None => {
                        json!({"ok": false, "error_type": "invalid_argument", "summary": "The frame is malformed."})
                    }
                }
            }
            "read" if bus.rx().frames.is_empty() && settings.mode != Mode::BadFrames => {
                if waiting.send((id, params)).is_err() {
                    return 1;
                }
                continue;
            }
            "read" => read(&bus, &params, settings.mode),
            "close" => {
                let reply = json!({"id": id, "result": {"ok": true, "protocol_version": 2, "safe_state_confirmed": true, "safe_state": {"controller": "stopped"}}});
                answer(&output, &reply);
                bus.rx().closed = true;
                return 0;
            }
            _ => {
                json!({"ok": false, "error_type": "invalid_argument", "summary": "Unknown method."})
            }
        };
        if !answer(&output, &json!({"id": id, "result": result})) {
            return 1;
        }
    }
    0
}

fn read(bus: &Bus, params: &Value, mode: Mode) -> Value {
    if mode == Mode::BadFrames {
        return json!({"ok": true, "frames": [{"id": 1, "dlc": 5, "data_hex": "00"}]});
    }
    let max = params
        .get("max_frames")
        .and_then(Value::as_u64)
        .map_or(1, |n| usize::try_from(n).unwrap_or(usize::MAX).max(1));
    let wait = params
        .get("wait_timeout_s")
        .and_then(Value::as_f64)
        .filter(|w| w.is_finite() && *w >= 0.0)
        .map_or(Duration::ZERO, |w| Duration::from_secs_f64(w.min(60.0)));
    let (mut rx, _) = bus
        .arrived
        .wait_timeout_while(bus.rx(), wait, |rx| rx.frames.is_empty())
        .unwrap_or_else(PoisonError::into_inner);
    let n = rx.frames.len().min(max);
    let frames: Vec<Value> = rx.frames.drain(..n).map(|f| f.to_json()).collect();
    json!({"ok": true, "frames": frames})
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An output the test can read after `serve` returned.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("buffer").write(buf)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn exchange(mode: Mode, lines: &[Value]) -> (i32, Vec<Value>) {
        let input: String = lines.iter().map(|l| l.to_string() + "\n").collect();
        let output = Shared::default();
        let code = serve(
            Settings {
                mode,
                period: Duration::ZERO,
            },
            input.as_bytes(),
            Box::new(output.clone()),
        );
        let bytes = output.0.lock().expect("buffer").clone();
        let answers = String::from_utf8(bytes)
            .expect("utf-8")
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect();
        (code, answers)
    }

    fn open(listen_only: bool) -> Value {
        json!({"id": 1, "method": "open", "params": {"channel": "sim0", "listen_only": listen_only}})
    }

    /// An open, a send of frame `frame_id` carrying `data_hex`, then a read of up to `max_frames`
    /// that does not wait.
    fn send_then_read(frame_id: u32, data_hex: &str, max_frames: u32) -> Vec<Value> {
        vec![
            open(false),
            json!({"id": 2, "method": "send", "params": {"frame": {"id": frame_id, "data_hex": data_hex}}}),
            json!({"id": 3, "method": "read", "params": {"max_frames": max_frames, "wait_timeout_s": 0}}),
        ]
    }

    #[test]
    fn the_ecu_answers_a_request_on_its_response_id() {
        let mut lines = send_then_read(0x7e0, "1001", 10);
        lines.push(json!({"id": 4, "method": "close", "params": {}}));
        let (code, answers) = exchange(Mode::Normal, &lines);
        assert_eq!(code, 0);
        assert_eq!(answers[0]["result"]["protocol_version"], 2);
        assert_eq!(
            answers[2]["result"]["frames"],
            json!([{"id": 0x7e8, "id_hex": "0x7e8", "extended": false, "rtr": false, "data_hex": "5001", "dlc": 2}])
        );
        assert_eq!(answers[3]["result"]["safe_state_confirmed"], true);
    }

    #[test]
    fn listen_only_is_echoed_unless_told_to_misbehave() {
        let (_, answers) = exchange(Mode::Normal, &[open(true)]);
        assert_eq!(answers[0]["result"]["listen_only"], true);
        let (_, answers) = exchange(Mode::NoListenOnly, &[open(true)]);
        assert!(answers[0]["result"].get("listen_only").is_none());
    }

    #[test]
    fn a_burst_trigger_queues_that_many_numbered_frames() {
        let (_, answers) = exchange(Mode::Normal, &send_then_read(0x7df, "0005", 100));
        let frames = answers[2]["result"]["frames"].as_array().expect("frames");
        assert_eq!(frames.len(), 5);
        assert_eq!(frames[4]["data_hex"], "00000004");
    }

    #[test]
    fn a_read_on_an_empty_queue_waits_for_the_next_frame() {
        let bus = Arc::new(Bus {
            rx: Mutex::default(),
            arrived: Condvar::new(),
        });
        let feeder = {
            let bus = Arc::clone(&bus);
            thread::spawn(move || {
                thread::sleep(Duration::from_millis(100));
                bus.push([frame(0x123, vec![1])]);
            })
        };
        let params = json!({"max_frames": 10, "wait_timeout_s": 5});
        let answer = read(&bus, &params, Mode::Normal);
        feeder.join().expect("the feeder ends");
        assert_eq!(answer["frames"][0]["id"], 0x123);
    }

    #[test]
    fn crash_modes_exit_without_answering() {
        let (code, answers) = exchange(Mode::CrashOpen, &[open(false)]);
        assert_eq!((code, answers.len()), (3, 0));
        let (_, answers) = exchange(Mode::Silent, &[open(false)]);
        assert!(answers.is_empty());
    }
}
