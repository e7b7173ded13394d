//! `power_supply_status`, `power_supply_set`, `power_supply_output`, `power_supply_cycle`: one short
//! conversation with a configured bench supply per call.
//!
//! Everything that can be decided without the unit is decided in the plan: the entry, the
//! channel, the values' grid, and (once the grant is there) the limits. The conversation then
//! checks the port's USB identity, asks the unit who it is, reads the channel, and only then
//! writes; every write is read back and compared exactly. A unit that stops answering after a
//! write leaves its state unknown, which the gate turns into an incident.

use super::args::Args;
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
use crate::ownership::device_keys::{self, Nodes};
use crate::ownership::runs::debugger_keys;
use crate::policy::{Action, Device, DeviceUse};
use crate::power::{
    self, IdentityVerdict, MASKED, Model, effective_limit, last_known_output, limits_doc,
    missing_limits, model_of, on_grid, protection_doc, reading_doc, render_limit, verify_identity,
};
use crate::serial::identity;
use crate::snapshot::pinned_debugger_executable;

mod conversation;

use conversation::Job;

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
    let wanted = ctx.args.arg_str("supply_id").unwrap_or_default();
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
                let board = super::debugger_info::device(name, debugger);
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
    let channel = ctx.args.arg_u64("channel");
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
    let channel = match args.arg_u64("channel") {
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
            on: args.arg_bool("on").unwrap_or(false),
        },
        _ => Request::Cycle {
            channel: one,
            off: Duration::try_from_secs_f64(args.arg_f64("off_s").unwrap_or(0.5))
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

/// Whether `port_id` is the serial link of a configured supply, and which: the entry a supply names,
/// or another entry naming the same device by any spelling (a link, the node it leads to), since
/// either opens the supply's port. `nodes` is the call's one reading of where each name leads.
pub fn supply_holding<'a>(
    config: &'a ahil_config::Config,
    nodes: &Nodes,
    port_id: &str,
) -> Option<&'a str> {
    let keys = |name: &str| -> Vec<String> {
        config
            .com_ports
            .get(name)
            .and_then(|p| p.device.as_deref())
            .filter(|d| !d.is_empty())
            .map(|d| device_keys::node_keys(&nodes.of(d)))
            .unwrap_or_default()
    };
    let opened = keys(port_id);
    config
        .power_supplies
        .iter()
        .find(|(_, s)| {
            s.com_port == port_id || keys(&s.com_port).iter().any(|k| opened.contains(k))
        })
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
