//! Running steps. Every hardware step is one or more calls of [`Bench::call`], so policy, claims,
//! device locks and the audit trail apply exactly as for an agent's own calls; the reactor adds only
//! waiting, matching and bookkeeping. Stops are honoured between steps and inside waits.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use ahil_config::plan::{
    CanComparator, DebugStartMode, Location, ResetMode, Step, TextComparator, UartMatch,
    UartPayload,
};
use serde_json::{Map, Value, json};

use super::matching;
use super::records::Registration;
use crate::Bench;
use crate::envelope::{Outcome, overall_success};

/// Delays and waits are cut into slices this long so a stop request ends them early.
const SLICE: Duration = Duration::from_millis(250);
/// Longest single read inside a read-until loop.
const READ_SLICE_S: f64 = 0.25;
/// Failure reports keep this many bytes of what was received.
const TAIL: usize = 512;
/// The decoded defmt frames a step's result keeps, the last ones read.
const FRAMES_TAIL: usize = 20;

/// Sessions the run opened and must close.
#[derive(Debug, Default)]
pub struct Opened {
    pub debug: Option<String>,
    pub uarts: Vec<String>,
    /// The debugger whose RTT session the run's first `rtt_expect` opened.
    pub rtt: Option<String>,
    /// (bus, participant).
    pub cans: Vec<(String, Option<String>)>,
}

/// Where a step sits, for progress.
#[derive(Debug, Clone, Default)]
pub struct Position {
    pub step: usize,
    pub iteration: Option<u64>,
    pub nested_step: Option<usize>,
}

impl Position {
    /// The plan's own step `step` (from 1), not one inside a repeat.
    pub fn top(step: usize) -> Self {
        Self {
            step,
            ..Self::default()
        }
    }
}

pub use crate::progress::ProgressSink;

/// One step's outcome.
pub struct Done {
    pub ok: bool,
    pub result: Value,
    pub error_type: Option<String>,
    pub iterations: Option<Value>,
}

impl Done {
    fn from_outcome(outcome: &Outcome) -> Self {
        Self {
            ok: overall_success(outcome),
            result: outcome.to_value(),
            error_type: outcome.error_type.clone(),
            iterations: None,
        }
    }

    fn failed(error_type: &str, mut result: Map<String, Value>) -> Self {
        result.insert("ok".into(), false.into());
        result.insert("error_type".into(), error_type.into());
        Self {
            ok: false,
            result: Value::Object(result),
            error_type: Some(error_type.to_owned()),
            iterations: None,
        }
    }

    fn passed(result: Map<String, Value>) -> Self {
        let mut result = result;
        result.insert("ok".into(), true.into());
        Self {
            ok: true,
            result: Value::Object(result),
            error_type: None,
            iterations: None,
        }
    }
}

/// The running plan.
pub struct Exec<'a> {
    pub bench: &'a Bench,
    pub reg: &'a mut Registration,
    pub opened: Opened,
    /// The last flash step of this run wrote an ELF: symbol reads without a session trust only it.
    pub flashed_elf: bool,
    pub stopped: bool,
    pub progress: Option<ProgressSink>,
    pub total_steps: usize,
}

fn route_name(step: &Step) -> Option<String> {
    step.route().map(|r| r.name.clone())
}

impl<'a> Exec<'a> {
    /// A plan of `total_steps` about to run: nothing opened yet, no stop seen.
    pub fn new(
        bench: &'a Bench,
        reg: &'a mut Registration,
        progress: Option<ProgressSink>,
        total_steps: usize,
    ) -> Self {
        Self {
            bench,
            reg,
            opened: Opened::default(),
            flashed_elf: false,
            stopped: false,
            progress,
            total_steps,
        }
    }
}

impl Exec<'_> {
    /// One gate call; boxed because the gate's own future contains the reactor's.
    pub async fn call(&self, tool: &str, args: Value) -> Outcome {
        let future: Pin<Box<dyn Future<Output = Outcome> + Send + '_>> =
            Box::pin(self.bench.call(tool, args));
        future.await
    }

    /// Whether a stop was requested (remembered once seen): by `test_reactor_stop`, or by the client
    /// cancelling the `test_reactor_run` call that runs this plan, which stops it as a stop request
    /// does rather than letting the plan drive the bench on for a caller that has gone.
    pub fn stop_requested(&mut self) -> bool {
        if !self.stopped {
            self.stopped = self.reg.stop_requested() || crate::cancel::is_cancelled();
        }
        self.stopped
    }

    fn report_progress(&mut self, at: &Position, step: &Step) {
        // Inside a repeat the top-level step is the repeat; the step running is the nested one.
        let mut doc = match at.nested_step {
            None => json!({"step": at.step, "action": step.action(), "route": route_name(step)}),
            Some(n) => json!({
                "step": at.step,
                "action": "repeat",
                "route": null,
                "iteration": at.iteration,
                "nested_step": n,
                "nested_action": step.action(),
                "nested_route": route_name(step),
            }),
        };
        self.reg.progress(doc.clone());
        if let Some(sink) = &self.progress {
            doc["total_steps"] = json!(self.total_steps);
            sink(doc);
        }
    }

    /// Sleeps `total`, in slices, ending early on a stop; answers whether it slept it all.
    async fn wait(&mut self, total: Duration) -> bool {
        let end = Instant::now() + total;
        loop {
            if self.stop_requested() {
                return false;
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return true;
            }
            tokio::time::sleep(left.min(SLICE)).await;
        }
    }

    /// Runs one step (a `repeat` runs its nested steps).
    pub fn run<'s>(
        &'s mut self,
        step: &'s Step,
        at: Position,
    ) -> Pin<Box<dyn Future<Output = Done> + Send + 's>> {
        Box::pin(async move {
            self.report_progress(&at, step);
            match step {
                Step::UartOpen { .. }
                | Step::UartWrite { .. }
                | Step::UartRead { .. }
                | Step::UartExpect { .. }
                | Step::UartClose { .. } => self.uart_step(step).await,
                Step::CanOpen { .. }
                | Step::CanSend { .. }
                | Step::CanRead { .. }
                | Step::CanClose { .. } => self.can_step(step).await,
                Step::DebugStart { .. }
                | Step::RunUntilBreakpoint { .. }
                | Step::DumpMemory { .. }
                | Step::ReadSymbol { .. }
                | Step::DebugStop { .. } => self.debug_step(step).await,
                Step::RttExpect { .. } => self.rtt_step(step).await,
                Step::Flash {
                    image_path,
                    reset_after_flash,
                    ..
                } => {
                    let done = self
                        .simple(
                            "flash_firmware",
                            json!({"image_path": image_path, "reset_after_flash": reset_after_flash}),
                        )
                        .await;
                    if done.ok {
                        self.flashed_elf = image_path.to_ascii_lowercase().ends_with(".elf");
                    }
                    done
                }
                Step::Reset { mode, .. } => {
                    let mode = match mode {
                        ResetMode::Run => "run",
                        ResetMode::Halt => "halt",
                        ResetMode::Init => "init",
                    };
                    self.simple("reset_target", json!({"mode": mode})).await
                }
                Step::Delay { duration_ms, .. } => {
                    let started = Instant::now();
                    let whole = self
                        .wait(Duration::from_millis(u64::from(*duration_ms)))
                        .await;
                    let mut doc = Map::new();
                    doc.insert("action".into(), "delay".into());
                    doc.insert("duration_ms".into(), json!(duration_ms));
                    doc.insert("elapsed_ms".into(), json!(elapsed_ms(started)));
                    if !whole {
                        doc.insert("interrupted_by_stop".into(), true.into());
                    }
                    Done::passed(doc)
                }
                Step::Repeat {
                    count,
                    duration_s,
                    steps,
                } => self.repeat(*count, *duration_s, steps, at).await,
            }
        })
    }

    async fn simple(&self, tool: &str, args: Value) -> Done {
        Done::from_outcome(&self.call(tool, args).await)
    }

    async fn until_breakpoint(&mut self, location: &Location, timeout_s: Option<f64>) -> Done {
        let location = match location {
            Location::Symbol(s) => json!({"symbol": s}),
            Location::Function(f) => json!({"function": f}),
            Location::FileLine { file, line } => json!({"file": file, "line": line}),
        };
        let set = self
            .call("debug_set_breakpoint", json!({"location": location}))
            .await;
        if !overall_success(&set) {
            return Done::from_outcome(&set);
        }
        let id = set.detail("breakpoint").and_then(|b| b.get("id")).cloned();
        let mut args = json!({});
        if let Some(t) = timeout_s {
            args["timeout_s"] = json!(t);
        }
        let resumed = self.call("debug_continue", args).await;
        let cleared = self.call("debug_clear_breakpoints", json!({})).await;
        let mut doc = Map::new();
        doc.insert("action".into(), "run_until_breakpoint".into());
        doc.insert("set".into(), set.to_value());
        doc.insert("continue".into(), resumed.to_value());
        doc.insert("clear".into(), cleared.to_value());
        if !overall_success(&resumed) {
            let error_type = resumed
                .error_type
                .clone()
                .unwrap_or_else(|| "unexpected_stop".into());
            doc.insert("summary".into(), json!(resumed.summary));
            return Done::failed(&error_type, doc);
        }
        let stop = resumed.detail("stop").cloned().unwrap_or(Value::Null);
        let ours = resumed.detail("stop_reason").and_then(Value::as_str) == Some("breakpoint_hit")
            && (id.is_none() || stop.get("breakpoint_id") == id.as_ref());
        if !ours {
            doc.insert(
                "summary".into(),
                json!("The target stopped, but not at the plan's breakpoint."),
            );
            doc.insert(
                "stop_reason".into(),
                resumed
                    .detail("stop_reason")
                    .cloned()
                    .unwrap_or(Value::Null),
            );
            return Done::failed("unexpected_stop", doc);
        }
        if !overall_success(&cleared) {
            doc.insert("summary".into(), json!(cleared.summary));
            return Done::failed(
                cleared.error_type.as_deref().unwrap_or("cleanup_failed"),
                doc,
            );
        }
        doc.insert("stop".into(), stop);
        doc.insert(
            "summary".into(),
            json!("The target stopped at the plan's breakpoint."),
        );
        Done::passed(doc)
    }

    /// Reads until the matcher is met or time runs out, keeping a bounded window of bytes.
    async fn read_until(&mut self, source: Source<'_>, until: Until<'_>, timeout_s: f64) -> Done {
        let expected_len = until.expected_len();
        let window_cap = matching::window_size(expected_len);
        let deadline = Instant::now() + Duration::from_secs_f64(timeout_s.clamp(0.0, 3600.0));
        let mut window: Vec<u8> = Vec::new();
        let mut received = 0usize;
        let mut reads = 0u32;
        // On a defmt channel `rtt_read` answers decoded lines (what is matched) and their frames,
        // which the report shows as they were read.
        let mut frames: Vec<Value> = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let last_pass = left.is_zero();
            let answer = self
                .call(
                    source.tool(),
                    source.args(left.as_secs_f64().min(READ_SLICE_S)),
                )
                .await;
            reads += 1;
            if !overall_success(&answer) {
                return Done::from_outcome(&answer);
            }
            let bytes = answer
                .detail("data")
                .and_then(|d| d["hex"].as_str())
                .and_then(decode_hex)
                .unwrap_or_default();
            received += bytes.len();
            if let Some(read) = answer.detail("frames").and_then(Value::as_array) {
                frames.extend(read.iter().cloned());
                frames.drain(..frames.len().saturating_sub(FRAMES_TAIL));
            }
            window.extend_from_slice(&bytes);
            if window.len() > window_cap {
                window.drain(..window.len() - window_cap);
            }
            let text = String::from_utf8_lossy(&window).into_owned();
            let hit = until.judge(&text, last_pass);
            let mut doc = Map::new();
            source.name_in(&mut doc);
            doc.insert("bytes_received".into(), json!(received));
            doc.insert("reads".into(), json!(reads));
            if !frames.is_empty() {
                doc.insert("frames".into(), Value::Array(frames.clone()));
            }
            if let Some(hit) = hit {
                doc.insert("matched".into(), true.into());
                if let Some(t) = hit.captured_text {
                    doc.insert("captured_text".into(), t.into());
                }
                if let Some(v) = hit.captured_value {
                    doc.insert("captured_value".into(), json!(v));
                }
                doc.insert("summary".into(), json!("The expected output arrived."));
                return Done::passed(doc);
            }
            let stopped = self.stop_requested();
            if last_pass || stopped {
                let tail = &window[window.len().saturating_sub(TAIL)..];
                doc.insert("matched".into(), false.into());
                doc.insert(
                    "received_tail".into(),
                    String::from_utf8_lossy(tail).into_owned().into(),
                );
                if let Until::Comparator(TextComparator {
                    matcher: ahil_config::plan::Matcher::Pattern { pattern, .. },
                }) = until
                    && let Some(last) = matching::last_capture(pattern, &text)
                {
                    doc.insert("captured_text".into(), last.into());
                }
                if stopped {
                    doc.insert("interrupted_by_stop".into(), true.into());
                }
                doc.insert(
                    "summary".into(),
                    json!(format!(
                        "The expected output did not arrive on '{}' within {timeout_s} s.",
                        source.label()
                    )),
                );
                return Done::failed(until.error_type(&source), doc);
            }
            if bytes.is_empty() {
                tokio::time::sleep(left.min(Duration::from_millis(50))).await;
            }
        }
    }

    /// Reads frames until one the comparator selects passes, or time runs out.
    async fn can_until(
        &mut self,
        bus: &str,
        participant: Option<&String>,
        comparator: &CanComparator,
        timeout_s: f64,
    ) -> Done {
        let deadline = Instant::now() + Duration::from_secs_f64(timeout_s.clamp(0.0, 3600.0));
        let mut tail: Vec<Value> = Vec::new();
        let mut seen = 0usize;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let answer = self
                .call(
                    "can_read",
                    bus_args(
                        bus,
                        participant,
                        json!({"wait_timeout_s": left.as_secs_f64().min(READ_SLICE_S)}),
                    ),
                )
                .await;
            if !overall_success(&answer) {
                return Done::from_outcome(&answer);
            }
            let frames = answer
                .detail("frames")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for frame in frames {
                seen += 1;
                let selected = matching::frame_selected(comparator, &frame);
                if selected && let Some(hit) = matching::frame(comparator, &frame) {
                    let mut doc = Map::new();
                    doc.insert("bus_id".into(), bus.into());
                    doc.insert("frame".into(), frame);
                    doc.insert("frames_seen".into(), json!(seen));
                    if let Some(v) = hit.captured_value {
                        doc.insert("captured_value".into(), json!(v));
                    }
                    doc.insert("summary".into(), json!("A matching frame arrived."));
                    return Done::passed(doc);
                }
                tail.push(frame);
                if tail.len() > 16 {
                    tail.remove(0);
                }
            }
            let stopped = self.stop_requested();
            if left.is_zero() || stopped {
                let mut doc = Map::new();
                doc.insert("bus_id".into(), bus.into());
                doc.insert("frames_seen".into(), json!(seen));
                doc.insert("frames_tail".into(), Value::Array(tail));
                doc.insert(
                    "summary".into(),
                    json!(format!(
                        "No frame on '{bus}' met the comparator within {timeout_s} s."
                    )),
                );
                return Done::failed("comparator_unmet", doc);
            }
        }
    }

    async fn repeat(
        &mut self,
        count: Option<u64>,
        duration_s: Option<f64>,
        steps: &[Step],
        at: Position,
    ) -> Done {
        let started = Instant::now();
        let mut iterations: Vec<Value> = Vec::new();
        let mut doc = Map::new();
        doc.insert("action".into(), "repeat".into());
        if let Some(c) = count {
            doc.insert("count".into(), json!(c));
        }
        if let Some(d) = duration_s {
            doc.insert("duration_s".into(), json!(d));
        }
        let mut iteration = 0u64;
        let (ok, exit_reason) = 'outer: loop {
            iteration += 1;
            let mut records = Vec::new();
            for (j, nested) in steps.iter().enumerate() {
                if self.stop_requested() {
                    doc.insert("stopped_after_nested_step".into(), json!(j));
                    iterations.push(json!({"iteration": iteration, "steps": records}));
                    break 'outer (true, "stopped");
                }
                let position = Position {
                    step: at.step,
                    iteration: Some(iteration),
                    nested_step: Some(j + 1),
                };
                let clock = Instant::now();
                let done = self.run(nested, position).await;
                records.push(record(j + 1, nested, &done, clock));
                if !done.ok {
                    doc.insert("failed_iteration".into(), json!(iteration));
                    doc.insert("failed_nested_step".into(), json!(j + 1));
                    doc.insert("failed_nested_action".into(), nested.action().into());
                    if let Some(e) = &done.error_type {
                        doc.insert("error_type".into(), e.clone().into());
                    }
                    iterations.push(json!({"iteration": iteration, "steps": records}));
                    break 'outer (false, "step_failed");
                }
            }
            iterations.push(json!({"iteration": iteration, "steps": records}));
            if count.is_some_and(|c| iteration >= c) {
                break (true, "count");
            }
            if duration_s.is_some_and(|d| started.elapsed().as_secs_f64() >= d) {
                break (true, "duration_s");
            }
            if self.stop_requested() {
                break (true, "stopped");
            }
        };
        doc.insert("iterations_run".into(), json!(iteration));
        doc.insert(
            "elapsed_s".into(),
            json!((started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0),
        );
        doc.insert("exit_reason".into(), exit_reason.into());
        doc.insert("ok".into(), ok.into());
        let error_type = doc
            .get("error_type")
            .and_then(Value::as_str)
            .map(str::to_owned);
        Done {
            ok,
            result: Value::Object(doc),
            error_type,
            iterations: Some(Value::Array(iterations)),
        }
    }
}

/// Where a read-until reads: a COM session's port, or an RTT session's up channel.
pub(super) enum Source<'s> {
    Port(&'s str),
    Rtt { debugger: &'s str, channel: &'s str },
}

impl Source<'_> {
    fn tool(&self) -> &'static str {
        match self {
            Source::Port(_) => "com_read",
            Source::Rtt { .. } => "rtt_read",
        }
    }

    fn args(&self, wait_s: f64) -> Value {
        match self {
            Source::Port(port) => json!({"port_id": port, "wait_timeout_s": wait_s}),
            Source::Rtt { channel, .. } => json!({"channel": channel, "wait_timeout_s": wait_s}),
        }
    }

    /// The step result's names for the source, as the tools' results name it.
    fn name_in(&self, doc: &mut Map<String, Value>) {
        match self {
            Source::Port(port) => {
                doc.insert("port_id".into(), (*port).into());
            }
            Source::Rtt { debugger, channel } => {
                doc.insert("debugger".into(), (*debugger).into());
                doc.insert("channel".into(), (*channel).into());
            }
        }
    }

    fn label(&self) -> String {
        match self {
            Source::Port(port) => (*port).to_owned(),
            Source::Rtt { debugger, channel } => format!("{debugger} rtt {channel}"),
        }
    }
}

/// What a read-until waits for.
enum Until<'p> {
    Expect(&'p UartMatch),
    Comparator(&'p TextComparator),
}

impl Until<'_> {
    fn expected_len(&self) -> usize {
        match self {
            Until::Expect(UartMatch::Text(t) | UartMatch::Pattern(t)) => t.len(),
            Until::Comparator(c) => match &c.matcher {
                ahil_config::plan::Matcher::Equals(v) => v.len(),
                ahil_config::plan::Matcher::Pattern { pattern, .. } => pattern.len(),
            },
        }
    }

    fn judge(&self, text: &str, last_pass: bool) -> Option<matching::Hit> {
        match self {
            Until::Expect(m) => matching::expect(m, text).then(matching::Hit::default),
            Until::Comparator(c) => matching::text(&c.matcher, text, last_pass),
        }
    }

    fn error_type(&self, source: &Source<'_>) -> &'static str {
        match self {
            Until::Expect(_) if matches!(source, Source::Rtt { .. }) => "rtt_expect_timeout",
            Until::Expect(_) => "uart_expect_timeout",
            Until::Comparator(_) => "comparator_unmet",
        }
    }
}

/// A step as the run report lists it.
pub fn record(index: usize, step: &Step, done: &Done, clock: Instant) -> Value {
    let mut doc = json!({
        "index": index,
        "route": route_name(step),
        "action": step.action(),
        "result": done.result,
        "elapsed_ms": elapsed_ms(clock),
    });
    if let Some(iterations) = &done.iterations {
        doc["iterations"] = iterations.clone();
    }
    doc
}

fn elapsed_ms(clock: Instant) -> u64 {
    u64::try_from(clock.elapsed().as_millis()).unwrap_or(u64::MAX)
}

fn as_map(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// A CAN tool's arguments: the bus, the participant when the step names one, and `rest`.
pub fn bus_args(bus: &str, participant: Option<&String>, rest: Value) -> Value {
    let mut args = rest;
    args["bus_id"] = json!(bus);
    if let Some(p) = participant {
        args["participant"] = json!(p);
    }
    args
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    let digits: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok())
        .collect()
}

mod kinds;

#[cfg(test)]
#[path = "steps_tests.rs"]
mod tests;
