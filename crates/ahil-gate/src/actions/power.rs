//! `power_supply_status`, `power_supply_set`, `power_supply_output`, `power_supply_cycle`: one short
//! conversation with a configured bench supply per call.
//!
//! Everything that can be decided without the unit is decided in the plan: the entry, the
//! channel, the values' grid, and (once the grant is there) the limits. The conversation then
//! checks the port's USB identity, asks the unit who it is, reads the channel, and only then
//! writes; every write is read back and compared exactly. A unit that stops answering after a
//! write leaves its state unknown, which the gate turns into an incident.

use crate::ErrorType;
use crate::catalogue::ToolId;
use std::time::Duration;

use ahil_config::PowerSupply;
use ahil_drivers::Contact;
use ahil_drivers::process::CancelFlag;
use ahil_drivers::psu::{Fixed, PowerSupply as _, PsuError, Quantity, Reading, Rs3005p};
use serde_json::{Value, json};

use super::{Acted, Context, DriverJob, Plan, Work};
use crate::envelope::{Outcome, SideEffectStatus};
use crate::ownership::runs::debugger_keys;
use crate::policy::{Action, Device, DeviceUse};
use crate::power::{
    self, IdentityVerdict, MASKED, Model, effective_limit, last_known_output, limits_doc,
    missing_limits, model_of, on_grid, protection_doc, reading_doc, render_limit, verify_identity,
};
use crate::serial::identity;
use crate::snapshot::pinned_debugger_executable;

/// Exchanges one call may need at most (identity, readings before and after, writes, read-backs).
const MAX_EXCHANGES: u32 = 24;

/// What a call asks of the unit.
#[derive(Debug, Clone, Copy)]
enum Request {
    Status {
        channel: Option<u8>,
    },
    Set {
        channel: u8,
        voltage: Option<(Fixed, f64)>,
        current: Option<(Fixed, f64)>,
    },
    Output {
        channel: u8,
        on: bool,
    },
    Cycle {
        channel: u8,
        off: Duration,
    },
}

pub fn plan<'a>(ctx: &'a Context<'a>) -> Result<Plan<'a>, Box<Outcome>> {
    super::serves(
        ctx.tool,
        &[
            ToolId::PowerSupplyStatus,
            ToolId::PowerSupplySet,
            ToolId::PowerSupplyOutput,
            ToolId::PowerSupplyCycle,
        ],
    )?;
    let config = &ctx.loaded.config;
    let tool = ctx.tool;
    let wanted = ctx
        .args
        .get("supply_id")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let Some((id, entry)) = config.power_supplies.get_key_value(wanted) else {
        return Err(unknown_supply(ctx, wanted));
    };
    let id = id.as_str();
    let Some(model) = model_of(&entry.kind) else {
        return Err(refusal(
            ctx,
            Outcome::refused(
                tool,
                ErrorType::ConfigInvalid,
                format!("power_supplies.{id}.type names a supply type this build cannot drive."),
            )
            .with("field", format!("power_supplies.{id}.type")),
        ));
    };
    let Some(port) = config.com_ports.get(&entry.com_port) else {
        return Err(refusal(
            ctx,
            Outcome::refused(
                tool,
                ErrorType::ComPortNotConfigured,
                format!("power_supplies.{id}.com_port names no com_ports entry."),
            )
            .with("port_id", entry.com_port.as_str()),
        ));
    };
    let request = request(ctx, id, model)?;
    let (action, grant) = match request {
        Request::Status { .. } => (Action::SupplyRead, true),
        Request::Set { .. } => (Action::SupplySet, entry.permissions.allow_set),
        Request::Output { .. } | Request::Cycle { .. } => {
            (Action::SupplyOutput, entry.permissions.allow_output)
        }
    };
    // Limits are checked once the grant is there, so an ungranted call is refused by policy.
    if grant {
        check_limits(ctx, id, entry, request)?;
    }
    let mut resources = vec![port.lock_key(&entry.com_port)];
    let mut also = Vec::new();
    if !matches!(request, Request::Status { .. }) {
        // A write changes the powered boards too: their debuggers are held for the call, and
        // switching the output restarts them as a reset would, so each must grant that.
        let switches = matches!(request, Request::Output { .. } | Request::Cycle { .. });
        for (name, debugger) in entry
            .powers
            .iter()
            .filter_map(|name| config.debuggers.get_key_value(name))
        {
            let exe = pinned_debugger_executable(ctx.loaded, name);
            resources.extend(debugger_keys(debugger, exe.as_deref()));
            if switches {
                let board = Device::Debugger {
                    name,
                    grants: debugger.permissions,
                };
                also.push(DeviceUse::on(board, Action::PowerBoard));
            }
        }
    }
    let timeout = Duration::try_from_secs_f64(entry.timeout_s).unwrap_or(Duration::from_secs(1));
    let off = match request {
        Request::Cycle { off, .. } => off,
        _ => Duration::ZERO,
    };
    let job = Job {
        tool: tool.name().to_owned(),
        supply_id: id.to_owned(),
        entry: entry.clone(),
        model,
        port_id: entry.com_port.clone(),
        device: port.device.clone(),
        node: port.device.as_deref().map(|d| ctx.snapshot.nodes.of(d)),
        expected: identity::expected(config, &entry.com_port, port),
        serials: power::configured_serials(config),
        request,
        timeout,
    };
    let if_abandoned = match request {
        Request::Status { .. } => Contact::none("a status call sends only queries"),
        _ => Contact::Possible,
    };
    Ok(Plan {
        action,
        device: Some(Device::PowerSupply {
            name: id,
            grants: entry.permissions,
        }),
        also,
        resources,
        work: Work::Driver(DriverJob {
            deadline: timeout * MAX_EXCHANGES + off + Duration::from_secs(10),
            if_abandoned,
            run: Box::new(move |cancel| job.run(&cancel)),
        }),
    })
}

/// A refusal before contact, with the `last_known_output` every result of this family carries.
fn refusal(ctx: &Context<'_>, outcome: Outcome) -> Box<Outcome> {
    let channel = ctx.args.get("channel").and_then(Value::as_u64);
    Box::new(
        outcome
            .with(
                "last_known_output",
                json!({"channel": channel, "output_on": null, "read_at": null}),
            )
            .not_contacted(),
    )
}

fn unknown_supply(ctx: &Context<'_>, wanted: &str) -> Box<Outcome> {
    let names: Vec<&String> = ctx.loaded.config.power_supplies.keys().collect();
    refusal(
        ctx,
        Outcome::refused(
            ctx.tool,
            ErrorType::UnknownDevice,
            format!("The configuration declares no power supply named '{wanted}'."),
        )
        .with("kind", "power_supply")
        .with("id", wanted)
        .with("configured_devices", json!(names))
        .with_remediation([
            "Use a supply_id from configured_devices; only the operator adds a supply.",
        ]),
    )
}

fn invalid(ctx: &Context<'_>, field: &str, validator: &str, summary: String) -> Box<Outcome> {
    refusal(
        ctx,
        Outcome::refused(ctx.tool, ErrorType::InvalidArgument, summary)
            .with("field", field)
            .with("validator", validator)
            .with_remediation([
                "Correct that one argument and call again; nothing was sent to the supply.",
            ]),
    )
}

/// The request the arguments make, checked against the model: channel range and the value grid.
fn request(ctx: &Context<'_>, id: &str, model: &Model) -> Result<Request, Box<Outcome>> {
    let args = ctx.args;
    let channels = model.capabilities.channels;
    let channel = match args.get("channel").and_then(Value::as_u64) {
        Some(n) if n > u64::from(channels) => {
            return Err(invalid(
                ctx,
                "channel",
                "maximum",
                format!(
                    "Power supply '{id}' has {channels} channel(s), numbered from 1; there is no channel {n}."
                ),
            ));
        }
        Some(n) => Some(u8::try_from(n).unwrap_or(1)),
        None => None,
    };
    let one = channel.unwrap_or(1);
    Ok(match ctx.tool {
        ToolId::PowerSupplyStatus => Request::Status { channel },
        ToolId::PowerSupplySet => {
            let value = |quantity: Quantity| -> Result<Option<(Fixed, f64)>, Box<Outcome>> {
                let Some(v) = args.get(quantity.key()).and_then(Value::as_f64) else {
                    return Ok(None);
                };
                let (unit, step) = match quantity {
                    Quantity::Voltage => ("V", "0.01 V"),
                    Quantity::Current => ("A", "0.001 A"),
                };
                on_grid(model, quantity, v).map(|f| Some((f, v))).ok_or_else(|| {
                    invalid(
                        ctx,
                        quantity.key(),
                        "multipleOf",
                        format!("{v} {unit} lies between two of this supply's {step} steps; values are never rounded."),
                    )
                })
            };
            let voltage = value(Quantity::Voltage)?;
            let current = value(Quantity::Current)?;
            if voltage.is_none() && current.is_none() {
                return Err(invalid(
                    ctx,
                    "voltage_v",
                    "required",
                    "power_supply_set needs voltage_v, current_a or both.".into(),
                ));
            }
            Request::Set {
                channel: one,
                voltage,
                current,
            }
        }
        ToolId::PowerSupplyOutput => Request::Output {
            channel: one,
            on: args.get("on").and_then(Value::as_bool).unwrap_or(false),
        },
        _ => Request::Cycle {
            channel: one,
            off: Duration::try_from_secs_f64(
                args.get("off_s").and_then(Value::as_f64).unwrap_or(0.5),
            )
            .unwrap_or(Duration::from_millis(500)),
        },
    })
}

/// Missing limits refuse every write on the channel; a requested value above its effective
/// limit refuses the call. Both before any contact.
fn check_limits(
    ctx: &Context<'_>,
    id: &str,
    entry: &PowerSupply,
    request: Request,
) -> Result<(), Box<Outcome>> {
    let channel = match request {
        Request::Status { .. } => return Ok(()),
        Request::Set { channel, .. }
        | Request::Output { channel, .. }
        | Request::Cycle { channel, .. } => channel,
    };
    let missing = missing_limits(id, entry, channel);
    if !missing.is_empty() {
        return Err(refusal(
            ctx,
            Outcome::refused(
                ctx.tool,
                ErrorType::PermissionDenied,
                format!(
                    "Writes on power supply '{id}' channel {channel} are refused: the configuration sets no {}.",
                    missing.join(", ")
                ),
            )
            .with("supply_id", id)
            .with("channel", channel)
            .with("missing_limits", json!(missing))
            .with_next_step(
                "This refusal is the answer: report the keys in `missing_limits` and stop. Only the operator writes \
                 a supply's limits, by hand, and restarts the server; do not suggest values and do not reach the supply another way.",
            )
            .with_remediation([
                "Report every key in `missing_limits` and stop.",
                "power_supply_status still reads the supply meanwhile.",
            ])
            .with_do_not([
                "Do not propose a limit from the supply's range, its present set point or a datasheet.",
                "Do not drive the supply another way.",
            ]),
        ));
    }
    if let Request::Set {
        voltage, current, ..
    } = request
    {
        for (quantity, value) in [(Quantity::Voltage, voltage), (Quantity::Current, current)] {
            let (Some((_, asked)), Ok(limit)) =
                (value, effective_limit(id, entry, channel, quantity))
            else {
                continue;
            };
            if asked > limit {
                return Err(refusal(
                    ctx,
                    above_limit(
                        ctx.tool.name(),
                        id,
                        channel,
                        quantity,
                        &json_number(asked),
                        limit,
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn json_number(v: f64) -> String {
    serde_json::Number::from_f64(v).map_or_else(|| v.to_string(), |n| n.to_string())
}

fn above_limit(
    tool: &str,
    id: &str,
    channel: u8,
    quantity: Quantity,
    value: &str,
    limit: f64,
) -> Outcome {
    let (what, unit) = match quantity {
        Quantity::Voltage => ("voltage", "V"),
        Quantity::Current => ("current", "A"),
    };
    Outcome::refused(
        tool,
        ErrorType::PowerSupplyLimitExceeded,
        format!(
            "The {what} of {value} {unit} is above the effective limit of {} {unit} on power supply '{id}' channel {channel}; nothing was written.",
            render_limit(limit)
        ),
    )
    .with("supply_id", id)
    .with("channel", channel)
    .with("field", quantity.key())
    .with("requested", value)
    .with("limit", render_limit(limit))
    .with_remediation([
        "Ask for a value at or below `limit`; when a stored set point is what is too high, set it within the limit first.",
        "If the task needs more, report it and stop: only the operator raises a limit.",
    ])
    .with_do_not(["Do not drive the supply another way to get past the limit."])
}

/// One call's conversation, owned so the blocking job can carry it.
struct Job {
    tool: String,
    supply_id: String,
    entry: PowerSupply,
    model: &'static Model,
    port_id: String,
    device: Option<String>,
    /// The node `device` led to when this call's claim was taken: what is opened.
    node: Option<String>,
    expected: Option<identity::Expected>,
    serials: Vec<String>,
    request: Request,
    timeout: Duration,
}

/// What the conversation learnt so far, for the results.
#[derive(Default)]
struct Seen {
    model: Option<String>,
    firmware: Option<String>,
    last: Option<(Reading, String)>,
}

impl Job {
    fn run(self, cancel: &CancelFlag) -> Acted {
        let tool = self.tool.as_str();
        let Some(device) = self.device.clone() else {
            return self.no_contact(
                Outcome::refused(
                    tool,
                    ErrorType::ComPortOpenFailed,
                    format!(
                        "com_ports.{} names no device, so the supply cannot be reached.",
                        self.port_id
                    ),
                )
                .with("port_id", self.port_id.as_str()),
                "no device is configured",
            );
        };
        if let Err(refused) = identity::verify(
            tool,
            &self.port_id,
            &device,
            self.expected.as_ref(),
            super::com_ports::host_ports,
        ) {
            let mut outcome = *refused;
            outcome.set("supply_id", self.supply_id.as_str());
            return self.no_contact(outcome, "the port's identity check only reads sysfs");
        }
        let node = self.node.as_deref().unwrap_or(&device);
        let mut psu = match Rs3005p::open(node, self.timeout) {
            Ok(psu) => psu.cancel_on(cancel.clone()),
            Err(err) => return self.failed(&err, &Seen::default()),
        };
        let mut seen = Seen::default();
        let identity = match psu.identify() {
            Ok(identity) => identity,
            Err(err) => return self.failed(&err, &seen),
        };
        seen.model.clone_from(&identity.model);
        seen.firmware.clone_from(&identity.firmware);
        match verify_identity(self.model, &self.entry, &identity) {
            IdentityVerdict::Confirmed => {}
            IdentityVerdict::Unknown => return self.identity_unknown(&seen),
            IdentityVerdict::Mismatch => return self.identity_mismatch(&seen),
        }
        let result = match self.request {
            Request::Status { channel } => self.status(&mut psu, &mut seen, channel),
            Request::Set {
                channel,
                voltage,
                current,
            } => self.set(&mut psu, &mut seen, channel, voltage, current),
            Request::Output { channel, on } => self.output(&mut psu, &mut seen, channel, on),
            Request::Cycle { channel, off } => {
                self.cycle(&mut psu, &mut seen, channel, off, cancel)
            }
        };
        result.unwrap_or_else(|err| self.failed(&err, &seen))
    }

    fn read(
        psu: &mut Rs3005p<ahil_drivers::psu::korad::SerialLink>,
        seen: &mut Seen,
        channel: u8,
    ) -> Result<Reading, PsuError> {
        let reading = psu.read(channel)?;
        seen.last = Some((reading.clone(), ahil_config::time::now_millis()));
        Ok(reading)
    }

    fn channels(&self) -> Vec<u8> {
        (1..=self.model.capabilities.channels).collect()
    }

    /// The fields every answer from a unit carries.
    fn base(&self, outcome: Outcome, seen: &Seen, channel: Option<u8>) -> Outcome {
        let channels = channel.map_or_else(|| self.channels(), |c| vec![c]);
        let mut outcome = outcome
            .with("supply_id", self.supply_id.as_str())
            .with("supply_type", self.model.kind);
        if let Some(c) = channel {
            outcome.set("channel", c);
        }
        outcome
            .with("model", json!(seen.model))
            .with("firmware", json!(seen.firmware))
            .with(
                "limits",
                limits_doc(&self.supply_id, &self.entry, &channels),
            )
            .with("protection", protection_doc(self.model, &channels))
            .with(
                "last_known_output",
                last_known_output(channel, seen.last.as_ref().map(|(r, at)| (r, at.as_str()))),
            )
    }

    fn status(
        &self,
        psu: &mut Rs3005p<ahil_drivers::psu::korad::SerialLink>,
        seen: &mut Seen,
        channel: Option<u8>,
    ) -> Result<Acted, PsuError> {
        let wanted = channel.map_or_else(|| self.channels(), |c| vec![c]);
        let mut docs = Vec::new();
        for &c in &wanted {
            let reading = Self::read(psu, seen, c)?;
            let at = seen
                .last
                .as_ref()
                .map(|(_, at)| at.clone())
                .unwrap_or_default();
            docs.push(reading_doc(&reading, &at));
        }
        let missing: Vec<String> = wanted
            .iter()
            .flat_map(|&c| missing_limits(&self.supply_id, &self.entry, c))
            .collect();
        let refused_reason = (!missing.is_empty()).then(|| {
            format!(
                "Writes are refused until the operator sets {} in the configuration.",
                missing.join(", ")
            )
        });
        let outcome = Outcome::ok(
            &self.tool,
            format!(
                "Read power supply '{}': {} channel(s); nothing was written.",
                self.supply_id,
                wanted.len()
            ),
        );
        let outcome = self
            .base(outcome, seen, channel)
            .with("channels", json!(docs))
            .with("missing_limits", json!(missing))
            .with("writes_refused_reason", json!(refused_reason));
        Ok(Acted {
            outcome,
            contact: Some(Contact::none("a status call sends only queries")),
        })
    }

    /// A stored set point above its limit refuses switching on (and a set that leaves it there).
    fn stored_above_limit(&self, reading: &Reading, skip: &[Quantity]) -> Option<Outcome> {
        for (quantity, stored) in [
            (Quantity::Voltage, reading.set_voltage),
            (Quantity::Current, reading.set_current),
        ] {
            if skip.contains(&quantity) {
                continue;
            }
            let Ok(limit) =
                effective_limit(&self.supply_id, &self.entry, reading.channel, quantity)
            else {
                continue;
            };
            if stored.to_f64() > limit + 1e-9 {
                return Some(
                    above_limit(
                        &self.tool,
                        &self.supply_id,
                        reading.channel,
                        quantity,
                        &stored.render(),
                        limit,
                    )
                    .with("stored_set_point", true),
                );
            }
        }
        None
    }

    fn set(
        &self,
        psu: &mut Rs3005p<ahil_drivers::psu::korad::SerialLink>,
        seen: &mut Seen,
        channel: u8,
        voltage: Option<(Fixed, f64)>,
        current: Option<(Fixed, f64)>,
    ) -> Result<Acted, PsuError> {
        let before = Self::read(psu, seen, channel)?;
        let asked: Vec<Quantity> = [
            voltage.map(|_| Quantity::Voltage),
            current.map(|_| Quantity::Current),
        ]
        .into_iter()
        .flatten()
        .collect();
        if let Some(refused) = self.stored_above_limit(&before, &asked) {
            return Ok(Self::queries_only(self.base(refused, seen, Some(channel))));
        }
        let mut requested = serde_json::Map::new();
        let mut read_back = serde_json::Map::new();
        for (quantity, value) in [(Quantity::Voltage, voltage), (Quantity::Current, current)] {
            let Some((fixed, asked)) = value else {
                continue;
            };
            requested.insert(quantity.key().into(), json!(json_number(asked)));
            let got = psu.set(channel, quantity, fixed)?;
            read_back.insert(quantity.key().into(), json!(got.render()));
            if got != fixed {
                let outcome = Outcome::refused(
                    &self.tool,
                    ErrorType::PowerSupplyReadbackMismatch,
                    format!(
                        "Power supply '{}' channel {channel} was set to {} {} and reads back {}.",
                        self.supply_id,
                        quantity.key(),
                        json_number(asked),
                        got.render()
                    ),
                )
                .with("requested", Value::Object(requested))
                .with("read_back", Value::Object(read_back));
                return Ok(Self::partial(self.base(outcome, seen, Some(channel))));
            }
        }
        let after = Self::read(psu, seen, channel)?;
        let at = seen
            .last
            .as_ref()
            .map(|(_, at)| at.clone())
            .unwrap_or_default();
        let what: Vec<String> = [
            voltage.map(|(_, v)| format!("{} V", json_number(v))),
            current.map(|(_, a)| format!("{} A", json_number(a))),
        ]
        .into_iter()
        .flatten()
        .collect();
        let outcome = Outcome::ok(
            &self.tool,
            format!(
                "Set {} on power supply '{}' channel {channel}; every value read back exactly.",
                what.join(" and "),
                self.supply_id
            ),
        )
        .with("requested", Value::Object(requested))
        .with("read_back", Value::Object(read_back));
        Ok(Self::committed(Self::measured(
            self.base(outcome, seen, Some(channel)),
            &after,
            &at,
        )))
    }

    fn output(
        &self,
        psu: &mut Rs3005p<ahil_drivers::psu::korad::SerialLink>,
        seen: &mut Seen,
        channel: u8,
        on: bool,
    ) -> Result<Acted, PsuError> {
        let before = Self::read(psu, seen, channel)?;
        if on && let Some(refused) = self.stored_above_limit(&before, &[]) {
            return Ok(Self::queries_only(self.base(refused, seen, Some(channel))));
        }
        if let Some(mismatch) = self.switch(psu, seen, channel, on)? {
            return Ok(mismatch);
        }
        let after = Self::read(psu, seen, channel)?;
        let at = seen
            .last
            .as_ref()
            .map(|(_, at)| at.clone())
            .unwrap_or_default();
        let outcome = Outcome::ok(
            &self.tool,
            format!(
                "Switched the output of power supply '{}' channel {channel} {}; the state read back.",
                self.supply_id,
                if on { "on" } else { "off" }
            ),
        )
        .with("requested", json!({"output_on": on}))
        .with("read_back", json!({"output_on": after.output_on}))
        .with("was_on", before.output_on);
        Ok(Self::committed(Self::measured(
            self.base(outcome, seen, Some(channel)),
            &after,
            &at,
        )))
    }

    /// Switches and compares; `Some` is the mismatch result.
    fn switch(
        &self,
        psu: &mut Rs3005p<ahil_drivers::psu::korad::SerialLink>,
        seen: &Seen,
        channel: u8,
        on: bool,
    ) -> Result<Option<Acted>, PsuError> {
        let state = psu.set_output(channel, on)?;
        if state == on {
            return Ok(None);
        }
        let outcome = Outcome::refused(
            &self.tool,
            ErrorType::PowerSupplyReadbackMismatch,
            format!(
                "Power supply '{}' channel {channel} was switched {} and reads back {}.",
                self.supply_id,
                if on { "on" } else { "off" },
                if state { "on" } else { "off" }
            ),
        )
        .with("requested", json!({"output_on": on}))
        .with("read_back", json!({"output_on": state}));
        Ok(Some(Self::partial(self.base(outcome, seen, Some(channel)))))
    }

    fn cycle(
        &self,
        psu: &mut Rs3005p<ahil_drivers::psu::korad::SerialLink>,
        seen: &mut Seen,
        channel: u8,
        off: Duration,
        cancel: &CancelFlag,
    ) -> Result<Acted, PsuError> {
        let before = Self::read(psu, seen, channel)?;
        if let Some(refused) = self.stored_above_limit(&before, &[]) {
            return Ok(Self::queries_only(self.base(refused, seen, Some(channel))));
        }
        if let Some(mismatch) = self.switch(psu, seen, channel, false)? {
            return Ok(mismatch);
        }
        let until = std::time::Instant::now() + off;
        while std::time::Instant::now() < until {
            if cancel.is_cancelled() {
                return Err(PsuError::Cancelled { after_write: true });
            }
            std::thread::sleep(Duration::from_millis(20).min(until - std::time::Instant::now()));
        }
        if let Some(mismatch) = self.switch(psu, seen, channel, true)? {
            return Ok(mismatch);
        }
        let after = Self::read(psu, seen, channel)?;
        let at = seen
            .last
            .as_ref()
            .map(|(_, at)| at.clone())
            .unwrap_or_default();
        let outcome = Outcome::ok(
            &self.tool,
            format!(
                "Cycled power supply '{}' channel {channel}: off, {} s, on; each state read back.",
                self.supply_id,
                json_number(off.as_secs_f64())
            ),
        )
        .with("requested", json!({"output_on": true}))
        .with("read_back", json!({"output_on": after.output_on}))
        .with("off_s", off.as_secs_f64());
        Ok(Self::committed(Self::measured(
            self.base(outcome, seen, Some(channel)),
            &after,
            &at,
        )))
    }

    fn measured(outcome: Outcome, after: &Reading, at: &str) -> Outcome {
        outcome
            .with(
                "measured",
                json!({"voltage_v": after.measured_voltage.render(), "current_a": after.measured_current.render()}),
            )
            .with("channels", json!([reading_doc(after, at)]))
    }

    fn committed(mut outcome: Outcome) -> Acted {
        outcome.side_effect_committed = Some(true);
        outcome.side_effect_status = Some(SideEffectStatus::Committed);
        outcome.retry_safe = Some(false);
        Acted {
            outcome,
            contact: Some(Contact::Made),
        }
    }

    /// A write that took, but not to the value asked: known to have changed the unit.
    fn partial(mut outcome: Outcome) -> Acted {
        outcome.side_effect_committed = Some(true);
        outcome.side_effect_status = Some(SideEffectStatus::Partial);
        outcome.retry_safe = Some(false);
        outcome = outcome
            .with_remediation([
                "Report `requested` and `read_back`, then call power_supply_status to read the whole channel.",
                "A supply that does not hold what it was told is for the operator to look at.",
            ])
            .with_do_not(["Do not write an offset value to land on the request, and do not retry in a loop."]);
        Acted {
            outcome,
            contact: Some(Contact::Made),
        }
    }

    fn queries_only(outcome: Outcome) -> Acted {
        Acted {
            outcome: outcome.not_contacted(),
            contact: Some(Contact::none(
                "only queries were sent, and they change nothing",
            )),
        }
    }

    fn no_contact(&self, outcome: Outcome, proof: &str) -> Acted {
        let outcome = outcome.with("last_known_output", last_known_output(self.channel(), None));
        Acted {
            outcome: outcome.not_contacted(),
            contact: Some(Contact::none(proof)),
        }
    }

    fn channel(&self) -> Option<u8> {
        match self.request {
            Request::Status { channel } => channel,
            Request::Set { channel, .. }
            | Request::Output { channel, .. }
            | Request::Cycle { channel, .. } => Some(channel),
        }
    }

    fn identity_unknown(&self, seen: &Seen) -> Acted {
        let outcome = Outcome::refused(
            &self.tool,
            ErrorType::PowerSupplyIdentityUnknown,
            format!(
                "The unit behind power supply '{}' reports a model or firmware this build has no verified {} record for; only the identity query was sent.",
                self.supply_id, self.model.kind
            ),
        )
        .with("supply_id", self.supply_id.as_str())
        .with("supply_type", self.model.kind)
        .with("model", json!(seen.model))
        .with("firmware", json!(seen.firmware))
        .with("last_known_output", last_known_output(self.channel(), None))
        .with_remediation([
            "Report `model` and `firmware` and stop.",
            "Check that the supply on this port is the type the configuration names.",
        ])
        .with_do_not(["Do not change `type` to get the call through, and do not drive the supply another way."]);
        Acted {
            outcome: outcome.not_started(false),
            contact: Some(Contact::none("only the identity query was sent")),
        }
    }

    fn identity_mismatch(&self, seen: &Seen) -> Acted {
        let outcome = Outcome::refused(
            &self.tool,
            ErrorType::PowerSupplyIdentityMismatch,
            format!(
                "The unit behind power supply '{id}' reports a serial other than power_supplies.{id}.idn_serial, so another unit is on this port; only the identity query was sent.",
                id = self.supply_id
            ),
        )
        .with("supply_id", self.supply_id.as_str())
        .with("model", json!(seen.model))
        .with("firmware", json!(seen.firmware))
        .with("expected_idn_serial", MASKED)
        .with("reported_idn_serial", MASKED)
        .with("last_known_output", last_known_output(self.channel(), None))
        .with_remediation([
            "Check which supply is cabled to this port and connect the configured unit.",
            "If the unit was replaced on purpose, the operator writes its idn_serial and checks the limits still fit.",
        ])
        .with_do_not(["Do not drive this unit through another entry or another way."]);
        Acted {
            outcome: outcome.not_started(false),
            contact: Some(Contact::none("only the identity query was sent")),
        }
    }

    /// A conversation that ended without an answer: before any write nothing changed; after one
    /// the unit's state is unknown, and the gate opens an incident.
    fn failed(&self, err: &PsuError, seen: &Seen) -> Acted {
        let after_write = err.after_write();
        let mut detail = power::mask_serials(&err.to_string(), &self.serials);
        // An identity answer carries the unit's serial: its text never leaves the call.
        if matches!(err, PsuError::Garbled { command, .. } if command == "*IDN?") {
            detail = "the supply answered *IDN? with text that is not an identity".into();
        }
        let summary = if after_write {
            format!(
                "Power supply '{}' stopped answering after this call had written to it, so whether that write took effect is unknown; the unit has to be checked before the bench is used again.",
                self.supply_id
            )
        } else {
            format!(
                "Power supply '{}' did not answer, and nothing that changes it had been sent.",
                self.supply_id
            )
        };
        let mut outcome = Outcome::refused(&self.tool, ErrorType::PowerSupplyNoReply, summary)
            .with("supply_id", self.supply_id.as_str())
            .with("cause", err.cause())
            .with("backend_error", detail)
            .with(
                "last_known_output",
                last_known_output(
                    self.channel(),
                    seen.last.as_ref().map(|(r, at)| (r, at.as_str())),
                ),
            )
            .with_remediation([
                "Read `cause` and `backend_error`; a port that did not open is usually held by another program.",
                "Without a write, check the cable and the port, then call power_supply_status once.",
                "After a write, the operator checks the set points and output on the unit itself.",
            ])
            .with_do_not(["Do not retry a write in a loop: a write without an answer may have been applied."]);
        if let Some(c) = self.channel() {
            outcome.set("channel", c);
        }
        let contact = err.contact();
        if matches!(contact, Contact::None { .. }) {
            outcome = outcome.not_contacted();
        }
        Acted {
            outcome,
            contact: Some(contact),
        }
    }
}

/// Whether `port_id` is the serial link of a configured supply, and which.
pub fn supply_holding<'a>(config: &'a ahil_config::Config, port_id: &str) -> Option<&'a str> {
    config
        .power_supplies
        .iter()
        .find(|(_, s)| s.com_port == port_id)
        .map(|(name, _)| name.as_str())
}

/// The refusal of a COM session on a supply's port.
pub fn port_reserved(tool: &str, port_id: &str, supply: &str) -> Outcome {
    Outcome::refused(
        tool,
        ErrorType::ComPortReservedForPowerSupply,
        format!(
            "COM port '{port_id}' is the serial link of power supply '{supply}' and is reserved for the supply's tools; nothing was opened."
        ),
    )
    .with("port_id", port_id)
    .with("power_supply", supply)
    .with_remediation([
        "Use power_supply_status, power_supply_set, power_supply_output or power_supply_cycle for the supply.",
        "For the board's console, use the com_ports entry of its own adapter.",
    ])
    .with_do_not(["Do not open this port another way: the supply would read bytes nobody meant for it."])
    .not_started(false)
}
