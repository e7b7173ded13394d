//! Preflight: everything a plan needs is checked against the configuration in force before the
//! first hardware action — every route names a configured device, every effect is permitted, every
//! regex compiles, every image and dump path is acceptable, every symbol is allowlisted, and sessions
//! are opened before they are used. A plan that fails here never touches the bench.

use std::collections::{BTreeMap, BTreeSet};

use ahil_config::plan::{
    CanComparator, DebugStartMode, Location, Matcher, Route, RouteKey, Step, SymbolComparator,
    TestPlan, TextComparator, UartMatch,
};
use ahil_config::{Config, DebuggerType, LoadedConfig};
use regex_automata::meta::Regex;
use serde_json::{Value, json};

use crate::artifacts::{self, ArtifactPolicy, ArtifactRef};
use crate::policy::{self, Action, BreakpointAt, Device, SymbolAllowlist};

/// Why a plan cannot run on this bench.
#[derive(Debug, Clone)]
pub struct Invalid {
    pub error_type: String,
    pub summary: String,
    /// `steps[i]…​.<key>`.
    pub field: String,
    /// Top-level index (1-based) of the step that failed.
    pub step: usize,
    pub action: &'static str,
    pub route: Option<String>,
    pub permission: Option<String>,
}

impl Invalid {
    pub fn to_value(&self) -> Value {
        let mut doc = json!({
            "error_type": self.error_type,
            "step": self.step,
            "field": self.field,
            "route": self.route,
            "action": self.action,
            "summary": self.summary,
        });
        if let Some(key) = &self.permission {
            doc["permission"] = json!(key);
        }
        doc
    }
}

/// A plan that passed preflight: the devices it names, as run selectors.
#[derive(Debug, Clone, Default)]
pub struct Prepared {
    pub selectors: Vec<Value>,
}

/// Where the walk is, and which sessions the steps so far have opened.
struct Walk<'a> {
    loaded: &'a LoadedConfig,
    artifacts: ArtifactPolicy,
    top: usize,
    uart_open: BTreeSet<String>,
    can_open: BTreeSet<String>,
    /// The participant each bus's `can_open` named: later steps on the bus act as it.
    can_as: BTreeMap<String, String>,
    debug_open: bool,
    selectors: Vec<Value>,
}

/// Checks `plan` against the loaded configuration.
pub fn check(loaded: &LoadedConfig, plan: &TestPlan) -> Result<Prepared, Box<Invalid>> {
    let mut walk = Walk {
        loaded,
        artifacts: ArtifactPolicy::from_config(&loaded.config),
        top: 0,
        uart_open: BTreeSet::new(),
        can_open: BTreeSet::new(),
        can_as: BTreeMap::new(),
        debug_open: false,
        selectors: Vec::new(),
    };
    for (i, step) in plan.steps.iter().enumerate() {
        walk.top = i + 1;
        walk.step(step, &format!("steps[{i}]"))?;
    }
    // A shared bus is held by the participants the plan opens, never whole: its broker owns it.
    let shared: Vec<Value> = walk
        .selectors
        .iter()
        .filter(|s| s.get("participant").is_some())
        .map(|s| s["id"].clone())
        .collect();
    walk.selectors.retain(|s| {
        s.get("participant").is_some() || s["kind"] != "can" || !shared.contains(&s["id"])
    });
    Ok(Prepared {
        selectors: walk.selectors,
    })
}

/// The device kind a step drives.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Debugger,
    Uart,
    Can,
    Any,
}

impl Walk<'_> {
    fn config(&self) -> &Config {
        &self.loaded.config
    }

    fn fail(
        &self,
        step: &Step,
        at: &str,
        key: &str,
        error_type: &str,
        summary: String,
    ) -> Box<Invalid> {
        Box::new(Invalid {
            error_type: error_type.to_owned(),
            summary,
            field: if key.is_empty() {
                at.to_owned()
            } else {
                format!("{at}.{key}")
            },
            step: self.top,
            action: step.action(),
            route: step.route().map(|r| r.name.clone()),
            permission: None,
        })
    }

    fn invalid(&self, step: &Step, at: &str, key: &str, summary: String) -> Box<Invalid> {
        self.fail(step, at, key, "test_config_invalid", summary)
    }

    fn select(&mut self, kind: &str, id: &str) {
        let selector = json!({"kind": kind, "id": id});
        if !self.selectors.contains(&selector) {
            self.selectors.push(selector);
        }
    }

    /// The configured entry a step drives, by the key it was named with.
    fn route(
        &mut self,
        step: &Step,
        at: &str,
        route: Option<&Route>,
        kind: Kind,
    ) -> Result<String, Box<Invalid>> {
        let config = self.config();
        let Some(route) = route else {
            return match config.auto_bound_debugger() {
                Some((name, _)) => {
                    let name = name.to_owned();
                    self.select("debugger", &name);
                    Ok(name)
                }
                None => Err(self.invalid(
                    step,
                    at,
                    "device",
                    "This step names no debugger, and the configuration does not have exactly one."
                        .into(),
                )),
            };
        };
        let key_fits = matches!(
            (route.key, kind),
            (RouteKey::Device | RouteKey::Debugger, Kind::Debugger)
                | (RouteKey::Device | RouteKey::PortId, Kind::Uart)
                | (RouteKey::Device | RouteKey::BusId, Kind::Can)
                | (_, Kind::Any)
        );
        if !key_fits {
            return Err(self.invalid(
                step,
                at,
                route.key.as_str(),
                format!(
                    "`{}` cannot name the device of a {} step.",
                    route.key.as_str(),
                    step.action()
                ),
            ));
        }
        let name = route.name.clone();
        let found = match kind {
            Kind::Debugger => config.debuggers.contains_key(&name).then_some("debugger"),
            Kind::Uart => config.com_ports.contains_key(&name).then_some("uart"),
            Kind::Can => config.can_buses.contains_key(&name).then_some("can"),
            Kind::Any => {
                if config.debuggers.contains_key(&name) {
                    Some("debugger")
                } else if config.com_ports.contains_key(&name) {
                    Some("uart")
                } else if config.can_buses.contains_key(&name) {
                    Some("can")
                } else {
                    None
                }
            }
        };
        let Some(found) = found else {
            return Err(self.fail(
                step,
                at,
                route.key.as_str(),
                "unknown_device",
                format!(
                    "The configuration has no device named '{name}' for a {} step.",
                    step.action()
                ),
            ));
        };
        self.select(found, &name);
        Ok(name)
    }

    /// `key` is the step's key that asks for the grant (`action`, or the `mode` or
    /// `reset_after_flash` that adds one), which a refusal names as its field.
    fn authorize(
        &self,
        step: &Step,
        at: &str,
        key: &str,
        device: Option<Device<'_>>,
        action: &Action<'_>,
    ) -> Result<(), Box<Invalid>> {
        let config = self.config();
        policy::authorize(config.version, &config.permissions, device, action).map_err(|refusal| {
            let mut invalid = self.fail(step, at, key, refusal.error_type, refusal.summary);
            invalid.permission = refusal.permission;
            invalid
        })
    }

    fn debugger<'c>(&'c self, name: &'c str) -> Option<Device<'c>> {
        self.config().debuggers.get(name).map(|d| Device::Debugger {
            name,
            grants: d.permissions,
        })
    }

    fn port<'c>(&'c self, name: &'c str) -> Option<Device<'c>> {
        self.config().com_ports.get(name).map(|p| Device::ComPort {
            name,
            grants: p.permissions,
        })
    }

    /// The bus `name` as `participant` (the step's, else the one its `can_open` named), whose
    /// share narrows the bus's grants as it does for the tool the step calls.
    fn bus<'c>(&'c self, name: &'c str, participant: Option<&'c str>) -> Option<Device<'c>> {
        let bus = self.config().can_buses.get(name)?;
        let participant = participant.or_else(|| self.can_as.get(name).map(String::as_str));
        let share = participant.and_then(|p| bus.shares.as_ref()?.get_key_value(p));
        let share = share.map(|(p, share)| (p.as_str(), share));
        Some(crate::actions::can_buses::shared_device(name, bus, share))
    }

    fn allowlist(&self) -> SymbolAllowlist<'_> {
        SymbolAllowlist {
            allow_all_symbols: self.config().debug.allow_all_symbols,
            allowed_symbols: &self.config().debug.allowed_symbols,
        }
    }

    fn image(&self, step: &Step, at: &str, path: &str) -> Result<(), Box<Invalid>> {
        artifacts::check(&self.artifacts, ArtifactRef::Path(path))
            .map(|_| ())
            .map_err(|refusal| {
                self.fail(
                    step,
                    at,
                    "image_path",
                    refusal.error_type().as_str(),
                    refusal.to_outcome("test_reactor").summary,
                )
            })
    }

    fn regex(
        &self,
        step: &Step,
        at: &str,
        key: &str,
        pattern: &str,
        needs_group: bool,
    ) -> Result<(), Box<Invalid>> {
        let regex = Regex::new(pattern).map_err(|err| {
            self.invalid(
                step,
                at,
                key,
                format!("The pattern does not compile: {err}."),
            )
        })?;
        if needs_group && regex.captures_len() < 2 {
            return Err(self.invalid(
                step,
                at,
                key,
                "A pattern with a range needs a capture group for the number.".into(),
            ));
        }
        Ok(())
    }

    fn matcher(&self, step: &Step, at: &str, matcher: &Matcher) -> Result<(), Box<Invalid>> {
        if let Matcher::Pattern { pattern, range } = matcher {
            self.regex(step, at, "comparator.pattern", pattern, range.is_some())?;
        }
        Ok(())
    }

    /// The entry a serial or CAN step drives, which an earlier `uart_open` or `can_open` step of
    /// the plan must have opened.
    fn in_session(
        &mut self,
        step: &Step,
        at: &str,
        route: &Route,
        kind: Kind,
    ) -> Result<String, Box<Invalid>> {
        let name = self.route(step, at, Some(route), kind)?;
        let (open, opener) = self.sessions(kind);
        if open.contains(&name) {
            Ok(name)
        } else {
            Err(self.invalid(
                step,
                at,
                "action",
                format!("No earlier {opener} step opens '{name}'."),
            ))
        }
    }

    /// The serial or CAN entries the plan has opened so far, and the step that opens one.
    fn sessions(&mut self, kind: Kind) -> (&mut BTreeSet<String>, &'static str) {
        match kind {
            Kind::Uart => (&mut self.uart_open, "uart_open"),
            Kind::Can => (&mut self.can_open, "can_open"),
            Kind::Debugger | Kind::Any => unreachable!("only serial and CAN steps open sessions"),
        }
    }

    /// The serial or CAN entry a step names, once its grant for `action` is checked: the grant
    /// first, as every call answers it, so a write the entry never allows is refused as such
    /// whether or not the plan opened the entry before it.
    fn granted(
        &mut self,
        step: &Step,
        at: &str,
        route: &Route,
        kind: Kind,
        action: &Action<'_>,
        participant: Option<&str>,
    ) -> Result<String, Box<Invalid>> {
        let name = self.route(step, at, Some(route), kind)?;
        let device = match kind {
            Kind::Uart => self.port(&name),
            _ => self.bus(&name, participant),
        };
        self.authorize(step, at, "action", device, action)?;
        Ok(name)
    }

    /// A supply's serial link (by any entry naming its device) is the supply tools' alone, so the
    /// `com_session_start` a `uart_open` step calls would be refused: refused here, before any step.
    fn not_a_supply_link(
        &self,
        step: &Step,
        at: &str,
        route: &Route,
        name: &str,
    ) -> Result<(), Box<Invalid>> {
        let nodes = crate::ownership::device_keys::Nodes::resolve(self.config());
        match crate::actions::power::supply_holding(self.config(), &nodes, name) {
            Some(supply) => {
                let refusal = crate::actions::power::port_reserved("test_reactor", name, supply);
                let error_type = refusal.error_type.unwrap_or_default();
                Err(self.fail(step, at, route.key.as_str(), &error_type, refusal.summary))
            }
            None => Ok(()),
        }
    }

    /// [`Self::granted`] for a CAN step, acting as the participant it names.
    fn granted_can(
        &mut self,
        step: &Step,
        at: &str,
        route: &Route,
        action: &Action<'_>,
        participant: Option<&String>,
    ) -> Result<String, Box<Invalid>> {
        let participant = participant.map(String::as_str);
        self.granted(step, at, route, Kind::Can, action, participant)
    }

    /// A `uart_close` or `can_close`: the entry must be open, and is closed from here on.
    fn close(
        &mut self,
        step: &Step,
        at: &str,
        route: &Route,
        kind: Kind,
    ) -> Result<(), Box<Invalid>> {
        let name = self.in_session(step, at, route, kind)?;
        self.sessions(kind).0.remove(&name);
        Ok(())
    }

    /// A symbol read or dump of `symbol`: its grant on the step's debugger. The step needs an earlier `debug_start`, except on a debugger whose symbol reads are served
    /// from the last flashed ELF without a session (ST-Link, as the reference does, and probe-rs):
    /// the step then fails at run time if no flash step of the run wrote an ELF.
    fn symbol_read(
        &mut self,
        step: &Step,
        at: &str,
        route: Option<&Route>,
        symbol: &str,
    ) -> Result<(), Box<Invalid>> {
        let name = self.route(step, at, route, Kind::Debugger)?;
        let kind = self.config().debuggers.get(&name).map(|d| d.kind);
        if !matches!(kind, Some(DebuggerType::Stlink | DebuggerType::ProbeRs)) {
            self.in_debug(step, at)?;
        }
        let action = Action::SymbolRead {
            symbol,
            allowlist: self.allowlist(),
        };
        self.authorize(step, at, "symbol", self.debugger(&name), &action)
    }

    fn in_debug(&self, step: &Step, at: &str) -> Result<(), Box<Invalid>> {
        if self.debug_open {
            Ok(())
        } else {
            Err(self.invalid(
                step,
                at,
                "action",
                "No earlier debug_start step opens a debug session.".into(),
            ))
        }
    }

    fn step(&mut self, step: &Step, at: &str) -> Result<(), Box<Invalid>> {
        match step {
            Step::Flash { .. } | Step::Reset { .. } => self.board_step(step, at)?,
            Step::UartOpen { .. }
            | Step::UartWrite { .. }
            | Step::UartRead { .. }
            | Step::UartExpect { .. }
            | Step::UartClose { .. } => self.uart_step(step, at)?,
            Step::CanOpen { .. }
            | Step::CanSend { .. }
            | Step::CanRead { .. }
            | Step::CanClose { .. } => self.can_step(step, at)?,
            Step::DebugStart { .. }
            | Step::RunUntilBreakpoint { .. }
            | Step::DumpMemory { .. }
            | Step::ReadSymbol { .. }
            | Step::DebugStop { .. } => self.debug_step(step, at)?,
            Step::RttExpect { .. } => self.rtt_step(step, at)?,
            Step::Delay { route, .. } => {
                self.route(step, at, Some(route), Kind::Any)?;
            }
            Step::Repeat { steps, .. } => {
                for (j, nested) in steps.iter().enumerate() {
                    self.step(nested, &format!("{at}.steps[{j}]"))?;
                }
            }
        }
        Ok(())
    }

    /// `rtt_expect`: a configured debugger, an up channel of its rtt section, the read granted.
    fn rtt_step(&mut self, step: &Step, at: &str) -> Result<(), Box<Invalid>> {
        let Step::RttExpect {
            route,
            channel,
            matcher,
            ..
        } = step
        else {
            unreachable!("step() routes only rtt_expect here")
        };
        let name = self.route(step, at, route.as_ref(), Kind::Debugger)?;
        let channels = self
            .config()
            .debuggers
            .get(&name)
            .and_then(|d| d.rtt.as_ref())
            .map(|rtt| {
                rtt.channels
                    .iter()
                    .filter(|c| c.direction == ahil_config::RttDirection::Up)
                    .map(|c| c.name.clone())
                    .collect::<Vec<_>>()
            });
        let summary = match &channels {
            None => Some(format!(
                "debuggers.{name} has no rtt section, so an rtt_expect step has no channel to read."
            )),
            Some(up) if !up.contains(channel) => Some(format!(
                "debuggers.{name}.rtt names no up channel '{channel}' (up channels: {}).",
                up.join(", ")
            )),
            Some(_) => None,
        };
        if let Some(summary) = summary {
            return Err(self.fail(step, at, "channel", "rtt_not_configured", summary));
        }
        self.authorize(step, at, "action", self.debugger(&name), &Action::RttRead)?;
        if let UartMatch::Pattern(pattern) = matcher {
            self.regex(step, at, "pattern", pattern, false)?;
        }
        Ok(())
    }

    /// Flash and reset.
    fn board_step(&mut self, step: &Step, at: &str) -> Result<(), Box<Invalid>> {
        match step {
            Step::Flash {
                route,
                image_path,
                reset_after_flash,
            } => {
                let name = self.route(step, at, route.as_ref(), Kind::Debugger)?;
                if self.debug_open {
                    return Err(self.invalid(step, at, "action", "Flashing is refused while the plan's debug session is open; add a debug_stop step first.".into()));
                }
                let flash = Action::Flash {
                    reset_after: *reset_after_flash,
                };
                self.authorize(step, at, "action", self.debugger(&name), &flash)
                    .map_err(|mut refused| {
                        // The reset the flag asks for is the flag's: name it, not the flash.
                        let reset = refused
                            .permission
                            .as_deref()
                            .is_some_and(|p| p.ends_with(".allow_reset"));
                        if reset && *reset_after_flash {
                            refused.field = format!("{at}.reset_after_flash");
                        }
                        refused
                    })?;
                self.image(step, at, image_path)?;
            }
            Step::Reset { route, .. } => {
                let name = self.route(step, at, route.as_ref(), Kind::Debugger)?;
                if self.debug_open {
                    return Err(self.invalid(step, at, "action", "A reset is refused while the plan's debug session is open; add a debug_stop step first.".into()));
                }
                self.authorize(step, at, "action", self.debugger(&name), &Action::Reset)?;
            }
            _ => unreachable!("step() routes only these kinds here"),
        }
        Ok(())
    }

    /// Serial-line steps.
    fn uart_step(&mut self, step: &Step, at: &str) -> Result<(), Box<Invalid>> {
        match step {
            Step::UartOpen { route, .. } => {
                let name = self.granted(step, at, route, Kind::Uart, &Action::ComRead, None)?;
                self.not_a_supply_link(step, at, route, &name)?;
                self.uart_open.insert(name);
            }
            Step::UartWrite { route, .. } => {
                self.granted(step, at, route, Kind::Uart, &Action::ComWrite, None)?;
                self.in_session(step, at, route, Kind::Uart)?;
            }
            Step::UartRead {
                route, comparator, ..
            } => {
                self.in_session(step, at, route, Kind::Uart)?;
                if let Some(TextComparator { matcher }) = comparator {
                    self.matcher(step, at, matcher)?;
                }
            }
            Step::UartExpect { route, matcher, .. } => {
                self.in_session(step, at, route, Kind::Uart)?;
                if let UartMatch::Pattern(pattern) = matcher {
                    self.regex(step, at, "pattern", pattern, false)?;
                }
            }
            Step::UartClose { route } => self.close(step, at, route, Kind::Uart)?,
            _ => unreachable!("step() routes only these kinds here"),
        }
        Ok(())
    }

    /// CAN steps.
    fn can_step(&mut self, step: &Step, at: &str) -> Result<(), Box<Invalid>> {
        match step {
            Step::CanOpen {
                route, participant, ..
            } => {
                let name =
                    self.granted_can(step, at, route, &Action::CanRead, participant.as_ref())?;
                if let Some(participant) = participant {
                    self.can_as.insert(name.clone(), participant.clone());
                    let selector = json!({"kind": "can", "id": name, "participant": participant});
                    if !self.selectors.contains(&selector) {
                        self.selectors.push(selector);
                    }
                }
                self.can_open.insert(name);
            }
            Step::CanSend {
                route, participant, ..
            } => {
                let name =
                    self.granted_can(step, at, route, &Action::CanWrite, participant.as_ref())?;
                self.in_session(step, at, route, Kind::Can)?;
                if self
                    .config()
                    .can_buses
                    .get(&name)
                    .is_some_and(|b| b.listen_only)
                {
                    return Err(self.fail(step, at, "action", "can_listen_only_mode", format!("The bus '{name}' is configured listen_only, so the plan may not send on it.")));
                }
            }
            Step::CanRead {
                route, comparator, ..
            } => {
                self.in_session(step, at, route, Kind::Can)?;
                if let Some(CanComparator { matcher, .. }) = comparator {
                    self.matcher(step, at, matcher)?;
                }
            }
            Step::CanClose { route, .. } => self.close(step, at, route, Kind::Can)?,
            _ => unreachable!("step() routes only these kinds here"),
        }
        Ok(())
    }

    /// Debug-session steps.
    fn debug_step(&mut self, step: &Step, at: &str) -> Result<(), Box<Invalid>> {
        match step {
            Step::DebugStart {
                route,
                image_path,
                mode,
                ..
            } => {
                let name = self.route(step, at, route.as_ref(), Kind::Debugger)?;
                if self.debug_open {
                    return Err(self.invalid(
                        step,
                        at,
                        "action",
                        "A debug session is already open at this step.".into(),
                    ));
                }
                let device = self.debugger(&name);
                self.authorize(step, at, "action", device, &Action::DebugSessionStart)?;
                if *mode != DebugStartMode::Attach {
                    self.authorize(step, at, "mode", device, &Action::Reset)?;
                }
                if *mode == DebugStartMode::Load {
                    let flash = Action::Flash { reset_after: false };
                    self.authorize(step, at, "mode", device, &flash)?;
                }
                if !image_path.to_ascii_lowercase().ends_with(".elf") {
                    return Err(self.invalid(
                        step,
                        at,
                        "image_path",
                        "A debug session needs the .elf image (symbols).".into(),
                    ));
                }
                self.image(step, at, image_path)?;
                self.debug_open = true;
            }
            Step::RunUntilBreakpoint {
                route, location, ..
            } => {
                let name = self.route(step, at, route.as_ref(), Kind::Debugger)?;
                self.in_debug(step, at)?;
                let at_symbol = match location {
                    Location::Symbol(s) | Location::Function(s) => BreakpointAt::Symbol(s),
                    Location::FileLine { .. } => BreakpointAt::Line,
                };
                let device = self.debugger(&name);
                self.authorize(
                    step,
                    at,
                    "location",
                    device,
                    &Action::DebugBreakpoint {
                        at: at_symbol,
                        allowlist: self.allowlist(),
                    },
                )?;
                self.authorize(step, at, "action", device, &Action::DebugContinue)?;
            }
            Step::DumpMemory {
                route,
                symbol,
                output_path,
            } => {
                self.symbol_read(step, at, route.as_ref(), symbol)?;
                crate::debug::output::check("test_reactor", self.config(), output_path).map_err(
                    |refusal| {
                        self.fail(
                            step,
                            at,
                            "output_path",
                            refusal
                                .error_type
                                .as_deref()
                                .unwrap_or("output_validation_failed"),
                            refusal.summary.clone(),
                        )
                    },
                )?;
            }
            Step::ReadSymbol {
                route,
                symbol,
                size_bytes,
                comparator,
            } => {
                self.symbol_read(step, at, route.as_ref(), symbol)?;
                if let Some(size) = size_bytes {
                    if comparator.is_some() && !matches!(size, 1 | 2 | 4 | 8) {
                        return Err(self.invalid(
                            step,
                            at,
                            "size_bytes",
                            "A comparator reads 1, 2, 4 or 8 bytes.".into(),
                        ));
                    }
                    if *size > self.config().debug.max_dump_size_bytes {
                        return Err(self.invalid(
                            step,
                            at,
                            "size_bytes",
                            "size_bytes exceeds debug.max_dump_size_bytes.".into(),
                        ));
                    }
                }
                if let Some(SymbolComparator::Range { min, max, .. }) = comparator
                    && min > max
                {
                    return Err(self.invalid(
                        step,
                        at,
                        "comparator.range",
                        "The range's min is above its max.".into(),
                    ));
                }
            }
            Step::DebugStop { route, .. } => {
                self.route(step, at, route.as_ref(), Kind::Debugger)?;
                self.in_debug(step, at)?;
                self.debug_open = false;
            }
            _ => unreachable!("step() routes only these kinds here"),
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "preflight_tests.rs"]
mod tests;
