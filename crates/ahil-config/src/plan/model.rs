//! The typed test plan, and its construction from a checked YAML tree.
//!
//! Construction runs only after the shape check passed, so it reads keys it knows are
//! there and falls back to a type's default only where the check made that impossible.

use std::path::PathBuf;

use crate::node::{Node, Path};

/// A test plan as written: version, optional name, steps.
#[derive(Debug, Clone, PartialEq)]
pub struct TestPlan {
    /// Plan format version (2 to 6).
    pub version: u8,
    /// `name:` as written; a loaded plan defaults it to the file stem.
    pub name: Option<String>,
    pub steps: Vec<Step>,
}

/// A plan read from a file in a workspace.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedPlan {
    pub plan: TestPlan,
    /// `name:`, or the file stem when the plan has none.
    pub name: String,
    /// Absolute, lexically normalized path of the file read.
    pub path: PathBuf,
    /// The path relative to the workspace, with `/` separators.
    pub display_path: String,
    /// Lowercase hex SHA-256 of the exact bytes parsed (`test_config_sha256`).
    pub sha256: String,
}

/// Which key named a step's device. `Device` is the version 3 spelling; the others are
/// the section-specific aliases of version 2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteKey {
    Device,
    Debugger,
    PortId,
    BusId,
}

impl RouteKey {
    /// The key as written in a plan.
    pub fn as_str(self) -> &'static str {
        match self {
            RouteKey::Device => "device",
            RouteKey::Debugger => "debugger",
            RouteKey::PortId => "port_id",
            RouteKey::BusId => "bus_id",
        }
    }

    pub(crate) fn parse(key: &str) -> Option<Self> {
        match key {
            "device" => Some(RouteKey::Device),
            "debugger" => Some(RouteKey::Debugger),
            "port_id" => Some(RouteKey::PortId),
            "bus_id" => Some(RouteKey::BusId),
            _ => None,
        }
    }
}

/// The configuration entry a step drives, and the key that named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub key: RouteKey,
    pub name: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetMode {
    Run,
    Halt,
    Init,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DebugStartMode {
    Attach,
    ResetHalt,
    Load,
}

/// Bytes a `uart_write` sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UartPayload {
    Text(String),
    /// Hex digits, whitespace allowed between them.
    Hex(String),
}

/// What a `uart_expect` waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UartMatch {
    /// A substring.
    Text(String),
    /// A regular expression (Python `re` syntax, compiled at preflight).
    Pattern(String),
}

/// Inclusive numeric bounds for a captured value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    pub min: f64,
    pub max: f64,
}

/// How text (a serial line) or a CAN payload is judged.
#[derive(Debug, Clone, PartialEq)]
pub enum Matcher {
    Equals(String),
    Pattern {
        pattern: String,
        range: Option<Range>,
    },
}

/// `comparator:` of `uart_read`.
#[derive(Debug, Clone, PartialEq)]
pub struct TextComparator {
    pub matcher: Matcher,
}

/// `comparator:` of `can_read`.
#[derive(Debug, Clone, PartialEq)]
pub struct CanComparator {
    pub id: u64,
    pub id_mask: Option<u64>,
    pub extended: bool,
    /// `Equals` holds payload hex.
    pub matcher: Matcher,
}

/// `comparator:` of `read_symbol`.
#[derive(Debug, Clone, PartialEq)]
pub enum SymbolComparator {
    Equals {
        value: i128,
        mask: Option<i128>,
        signed: bool,
    },
    Range {
        min: i128,
        max: i128,
        signed: bool,
    },
}

/// Where `run_until_breakpoint` stops.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A bare symbol or `{symbol: …}`.
    Symbol(String),
    Function(String),
    FileLine {
        file: String,
        line: u64,
    },
}

/// One step of a plan. Routes are `None` only where the plan may omit them (a debugger
/// step when the configuration has exactly one debugger). A variant's `action:` is its name
/// in snake case.
#[derive(Debug, Clone, PartialEq, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum Step {
    Flash {
        route: Option<Route>,
        image_path: String,
        reset_after_flash: bool,
    },
    Reset {
        route: Option<Route>,
        mode: ResetMode,
    },
    UartOpen {
        route: Route,
        clear_buffer: bool,
    },
    UartWrite {
        route: Route,
        payload: UartPayload,
    },
    UartRead {
        route: Route,
        comparator: Option<TextComparator>,
        timeout_s: Option<f64>,
    },
    UartExpect {
        route: Route,
        matcher: UartMatch,
        timeout_s: f64,
    },
    UartClose {
        route: Route,
    },
    /// Ours alone: waits on an RTT up channel of the debugger.
    RttExpect {
        route: Option<Route>,
        channel: String,
        matcher: UartMatch,
        timeout_s: f64,
    },
    CanOpen {
        route: Route,
        participant: Option<String>,
        clear_rx_queue: bool,
    },
    CanClose {
        route: Route,
        participant: Option<String>,
    },
    CanSend {
        route: Route,
        participant: Option<String>,
        frame_id: u64,
        extended: bool,
        rtr: bool,
        data_hex: String,
    },
    CanRead {
        route: Route,
        participant: Option<String>,
        comparator: Option<CanComparator>,
        /// `None`: the bus's `max_buffer_frames`.
        max_frames: Option<u64>,
        timeout_s: Option<f64>,
        wait_timeout_s: Option<f64>,
    },
    DebugStart {
        route: Option<Route>,
        image_path: String,
        mode: DebugStartMode,
        timeout_s: Option<f64>,
    },
    RunUntilBreakpoint {
        route: Option<Route>,
        location: Location,
        timeout_s: Option<f64>,
    },
    DumpMemory {
        route: Option<Route>,
        symbol: String,
        output_path: String,
    },
    ReadSymbol {
        route: Option<Route>,
        symbol: String,
        size_bytes: Option<u64>,
        comparator: Option<SymbolComparator>,
    },
    DebugStop {
        route: Option<Route>,
        timeout_s: Option<f64>,
    },
    Delay {
        route: Route,
        duration_ms: u32,
    },
    Repeat {
        count: Option<u64>,
        duration_s: Option<f64>,
        steps: Vec<Step>,
    },
}

impl Step {
    /// The `action:` this step was written with.
    pub fn action(&self) -> &'static str {
        self.into()
    }

    /// The device this step drives, when it names one.
    pub fn route(&self) -> Option<&Route> {
        match self {
            Step::Flash { route, .. }
            | Step::Reset { route, .. }
            | Step::DebugStart { route, .. }
            | Step::RunUntilBreakpoint { route, .. }
            | Step::DumpMemory { route, .. }
            | Step::ReadSymbol { route, .. }
            | Step::DebugStop { route, .. }
            | Step::RttExpect { route, .. } => route.as_ref(),
            Step::UartOpen { route, .. }
            | Step::UartWrite { route, .. }
            | Step::UartRead { route, .. }
            | Step::UartExpect { route, .. }
            | Step::UartClose { route }
            | Step::CanOpen { route, .. }
            | Step::CanClose { route, .. }
            | Step::CanSend { route, .. }
            | Step::CanRead { route, .. }
            | Step::Delay { route, .. } => Some(route),
            Step::Repeat { .. } => None,
        }
    }
}

/// Builds a nested step list (`repeat`), supplied by the loader.
pub(crate) type NestedSteps<'n> = &'n dyn Fn(&Node, &Path) -> Vec<Step>;

/// Reads a checked step tree; `at` is the step's path for the rare fault.
pub(crate) struct Reader<'a> {
    node: &'a Node,
    at: &'a Path,
}

fn saturate(i: i128) -> u64 {
    u64::try_from(i.max(0)).unwrap_or(u64::MAX)
}

impl<'a> Reader<'a> {
    pub(crate) fn new(node: &'a Node, at: &'a Path) -> Self {
        Self { node, at }
    }

    fn get(&self, k: &str) -> Option<&'a Node> {
        self.node.get(k)
    }

    fn str(&self, k: &str) -> Option<String> {
        match self.get(k) {
            Some(Node::Str(s)) => Some(s.clone()),
            _ => None,
        }
    }

    fn string(&self, k: &str) -> String {
        self.str(k).unwrap_or_default()
    }

    fn flag(&self, k: &str, default: bool) -> bool {
        match self.get(k) {
            Some(Node::Bool(b)) => *b,
            _ => default,
        }
    }

    fn num(&self, k: &str) -> Option<f64> {
        match self.get(k) {
            #[allow(clippy::cast_precision_loss)]
            Some(Node::Int(i)) => Some(*i as f64),
            Some(Node::Float(f)) => Some(*f),
            _ => None,
        }
    }

    fn int(&self, k: &str) -> Option<i128> {
        int_of(self.get(k)?)
    }

    /// A non-negative integer; beyond 64 bits it saturates. The reference reads such a
    /// value as a Python integer and accepts the plan; a saturated count or id means the
    /// same (unbounded, or refused by preflight as no CAN id) without a fault at load.
    fn unsigned(&self, k: &str) -> Option<u64> {
        self.int(k).map(saturate)
    }

    fn can_id(&self, k: &str) -> Option<u64> {
        match self.get(k) {
            Some(Node::Str(s)) => {
                let parsed = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
                    Some(h) => u64::from_str_radix(h, 16),
                    None => s.parse::<u64>(),
                };
                // Checked against the pattern already: the only failure left is overflow.
                Some(parsed.unwrap_or(u64::MAX))
            }
            Some(_) => self.unsigned(k),
            None => None,
        }
    }

    /// The one route key present, in canonical order.
    pub(crate) fn route(&self) -> Option<Route> {
        super::catalogue::ROUTE_KEYS.iter().find_map(|k| {
            let name = self.str(k)?;
            Some(Route {
                key: RouteKey::parse(k)?,
                name,
            })
        })
    }

    fn must_route(&self) -> Route {
        // The shape check requires a route key for these kinds.
        self.route().unwrap_or(Route {
            key: RouteKey::Device,
            name: String::new(),
        })
    }

    fn matcher(&self, equals_key: &str) -> Matcher {
        match self.str(equals_key) {
            Some(e) => Matcher::Equals(e),
            None => Matcher::Pattern {
                pattern: self.string("pattern"),
                range: self.get("range").map(|r| {
                    let r = Reader::new(r, self.at);
                    Range {
                        min: r.num("min").unwrap_or_default(),
                        max: r.num("max").unwrap_or_default(),
                    }
                }),
            },
        }
    }

    fn sub<'b>(&self, k: &str, at: &'b Path) -> Option<Reader<'b>>
    where
        'a: 'b,
    {
        self.get(k).map(|n| Reader::new(n, at))
    }

    pub(crate) fn step(&self, nested: NestedSteps) -> Step {
        let action = self.string("action");
        match action.as_str() {
            "flash" | "reset" | "delay" => self.board_step(&action),
            "uart_open" | "uart_write" | "uart_read" | "uart_expect" | "uart_close" => {
                self.uart_step(&action)
            }
            "can_open" | "can_close" | "can_send" | "can_read" => self.can_step(&action),
            "rtt_expect" => Step::RttExpect {
                route: self.route(),
                channel: self.string("channel"),
                matcher: self.text_or_pattern(),
                timeout_s: self.num("timeout_s").unwrap_or_default(),
            },
            "debug_start"
            | "run_until_breakpoint"
            | "dump_memory"
            | "read_symbol"
            | "debug_stop" => self.debug_step(&action),
            _ => Step::Repeat {
                count: self.unsigned("count"),
                duration_s: self.num("duration_s"),
                steps: match self.get("steps") {
                    Some(n) => nested(n, &self.at.key("steps")),
                    None => Vec::new(),
                },
            },
        }
    }

    /// A step on the board itself: flash, reset, or a delay.
    fn board_step(&self, action: &str) -> Step {
        match action {
            "flash" => Step::Flash {
                route: self.route(),
                image_path: self.string("image_path"),
                reset_after_flash: self.flag("reset_after_flash", false),
            },
            "reset" => Step::Reset {
                route: self.route(),
                mode: match self.str("mode").as_deref() {
                    Some("halt") => ResetMode::Halt,
                    Some("init") => ResetMode::Init,
                    _ => ResetMode::Run,
                },
            },
            _ => Step::Delay {
                route: self.must_route(),
                duration_ms: self
                    .int("duration_ms")
                    .and_then(|d| u32::try_from(d).ok())
                    .unwrap_or_default(),
            },
        }
    }

    /// A UART step.
    fn uart_step(&self, action: &str) -> Step {
        let timeout = self.num("timeout_s");
        let cmp_at = self.at.key("comparator");
        match action {
            "uart_open" => Step::UartOpen {
                route: self.must_route(),
                clear_buffer: self.flag("clear_buffer", true),
            },
            "uart_write" => Step::UartWrite {
                route: self.must_route(),
                payload: match self.str("hex") {
                    Some(h) => UartPayload::Hex(h),
                    None => UartPayload::Text(self.string("text")),
                },
            },
            "uart_read" => Step::UartRead {
                route: self.must_route(),
                comparator: self.sub("comparator", &cmp_at).map(|c| TextComparator {
                    matcher: c.matcher("equals"),
                }),
                timeout_s: timeout,
            },
            "uart_expect" => Step::UartExpect {
                route: self.must_route(),
                matcher: self.text_or_pattern(),
                timeout_s: timeout.unwrap_or_default(),
            },
            _ => Step::UartClose {
                route: self.must_route(),
            },
        }
    }

    /// An expect step's `text` or `pattern`.
    fn text_or_pattern(&self) -> UartMatch {
        match self.str("pattern") {
            Some(p) => UartMatch::Pattern(p),
            None => UartMatch::Text(self.string("text")),
        }
    }

    /// A CAN step.
    fn can_step(&self, action: &str) -> Step {
        let timeout = self.num("timeout_s");
        let cmp_at = self.at.key("comparator");
        match action {
            "can_open" => Step::CanOpen {
                route: self.must_route(),
                participant: self.str("participant"),
                clear_rx_queue: self.flag("clear_rx_queue", true),
            },
            "can_close" => Step::CanClose {
                route: self.must_route(),
                participant: self.str("participant"),
            },
            "can_send" => Step::CanSend {
                route: self.must_route(),
                participant: self.str("participant"),
                frame_id: self.can_id("frame_id").unwrap_or_default(),
                extended: self.flag("extended", false),
                rtr: self.flag("rtr", false),
                data_hex: self.string("data_hex"),
            },
            _ => Step::CanRead {
                route: self.must_route(),
                participant: self.str("participant"),
                comparator: self.sub("comparator", &cmp_at).map(|c| CanComparator {
                    id: c.can_id("id").unwrap_or_default(),
                    id_mask: c.can_id("id_mask"),
                    extended: c.flag("extended", false),
                    matcher: c.matcher("equals"),
                }),
                max_frames: self.unsigned("max_frames"),
                timeout_s: timeout,
                wait_timeout_s: self.num("wait_timeout_s"),
            },
        }
    }

    /// A debug-session step.
    fn debug_step(&self, action: &str) -> Step {
        let timeout = self.num("timeout_s");
        let cmp_at = self.at.key("comparator");
        match action {
            "debug_start" => Step::DebugStart {
                route: self.route(),
                image_path: self.string("image_path"),
                mode: match self.str("mode").as_deref() {
                    Some("reset_halt") => DebugStartMode::ResetHalt,
                    Some("load") => DebugStartMode::Load,
                    _ => DebugStartMode::Attach,
                },
                timeout_s: timeout,
            },
            "run_until_breakpoint" => Step::RunUntilBreakpoint {
                route: self.route(),
                location: self.location(),
                timeout_s: timeout,
            },
            "dump_memory" => Step::DumpMemory {
                route: self.route(),
                symbol: self.string("symbol"),
                output_path: self.string("output_path"),
            },
            "read_symbol" => Step::ReadSymbol {
                route: self.route(),
                symbol: self.string("symbol"),
                size_bytes: self.unsigned("size_bytes"),
                comparator: self.sub("comparator", &cmp_at).map(|c| {
                    let signed = c.flag("signed", false);
                    if let Some(value) = c.int("equals") {
                        SymbolComparator::Equals {
                            value,
                            mask: c.int("mask"),
                            signed,
                        }
                    } else {
                        let r = c.get("range").map(|r| Reader::new(r, c.at));
                        SymbolComparator::Range {
                            min: r.as_ref().and_then(|r| r.int("min")).unwrap_or_default(),
                            max: r.as_ref().and_then(|r| r.int("max")).unwrap_or_default(),
                            signed,
                        }
                    }
                }),
            },
            _ => Step::DebugStop {
                route: self.route(),
                timeout_s: timeout,
            },
        }
    }

    fn location(&self) -> Location {
        match self.get("location") {
            Some(Node::Str(s)) => Location::Symbol(s.clone()),
            Some(n) => {
                let at = self.at.key("location");
                let r = Reader::new(n, &at);
                if let Some(s) = r.str("symbol") {
                    Location::Symbol(s)
                } else if let Some(f) = r.str("function") {
                    Location::Function(f)
                } else {
                    Location::FileLine {
                        file: r.string("file"),
                        line: r.unsigned("line").unwrap_or_default(),
                    }
                }
            }
            None => Location::Symbol(String::new()),
        }
    }
}

pub(crate) fn int_of(n: &Node) -> Option<i128> {
    match n {
        Node::Int(i) => Some(*i),
        #[allow(clippy::cast_possible_truncation)]
        Node::Float(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e30 => Some(*f as i128),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::catalogue::actions;
    use super::super::load::parse_plan;

    #[test]
    fn every_step_answers_the_action_it_was_written_with() {
        let plan = parse_plan(
            br#"
version: 6
steps:
  - {device: dut, action: flash, image_path: app.elf}
  - {device: dut, action: reset}
  - {device: uart, action: uart_open}
  - {device: uart, action: uart_write, text: "x"}
  - {device: uart, action: uart_read}
  - {device: uart, action: uart_expect, text: "x", timeout_s: 1}
  - {device: uart, action: uart_close}
  - {device: dut, action: rtt_expect, channel: log, text: "x", timeout_s: 1}
  - {device: can, action: can_open}
  - {device: can, action: can_close}
  - {device: can, action: can_send, frame_id: 1}
  - {device: can, action: can_read}
  - {device: dut, action: debug_start, image_path: app.elf}
  - {device: dut, action: run_until_breakpoint, location: main}
  - {device: dut, action: dump_memory, symbol: buf, output_path: buf.hex}
  - {device: dut, action: read_symbol, symbol: word}
  - {device: dut, action: debug_stop}
  - {device: dut, action: delay, duration_ms: 1}
  - {action: repeat, count: 1, steps: [{device: dut, action: reset}]}
"#,
        )
        .expect("a plan of every kind");
        let mut answered: Vec<&str> = plan.steps.iter().map(super::Step::action).collect();
        let mut written = actions();
        answered.sort_unstable();
        written.sort_unstable();
        assert_eq!(answered, written);
    }
}
