//! `can_buses_list`, and the lookups every CAN tool shares: the bus entry, its policy device, and the
//! refusal of arguments this build does not serve (participants of shared buses).

use crate::ErrorType;
use crate::catalogue::ToolId;
use ahil_config::{CanBus, ListenOnlyEnforcement};
use serde_json::{Map, Value, json};

use super::{Acted, Context, Plan, Work};
use crate::can::{Sessions, adapter};
use crate::envelope::Outcome;
use crate::policy::{Action, Device};

/// The adapters a configuration may name.
pub const SUPPORTED_ADAPTERS: [&str; 3] = ["peak", "socketcan", "process"];

/// The policy device of a bus.
pub fn device<'a>(bus_id: &'a str, bus: &CanBus) -> Device<'a> {
    Device::CanBus {
        name: bus_id,
        grants: bus.permissions,
    }
}

/// The `can_buses` entry named by `bus_id`, or the refusal for this call.
pub fn bus_entry<'a>(ctx: &'a Context<'a>) -> Result<(&'a str, &'a CanBus), Box<Outcome>> {
    let bus_id = ctx.args.get("bus_id").and_then(Value::as_str).unwrap_or("");
    let buses = &ctx.loaded.config.can_buses;
    let Some((name, bus)) = buses.get_key_value(bus_id) else {
        let configured: Vec<&str> = buses.keys().map(String::as_str).collect();
        return Err(Box::new(
            Outcome::refused(
                ctx.tool,
                ErrorType::CanBusNotConfigured,
                format!("No can_buses entry is named `{bus_id}`."),
            )
            .with("bus_id", bus_id)
            .with("configured_buses", json!(configured))
            .with_remediation(["Call can_buses_list and use one of the bus_id values it shows."])
            .not_contacted(),
        ));
    };
    let participant = ctx.args.get("participant").and_then(Value::as_str);
    if bus.shares.is_some() {
        return Err(Box::new(
            Outcome::refused(
                ctx.tool,
                ErrorType::NotSupported,
                format!("can_buses.{name} is a shared bus (`shares`); this build does not run the bus broker that shared buses need."),
            )
            .with("bus_id", name.as_str())
            .with_remediation(["The operator removes `shares` to give the bus a single owner, or uses the reference implementation for brokered buses."])
            .not_started(false),
        ));
    }
    if let Some(participant) = participant {
        return Err(Box::new(
            Outcome::refused(
                ctx.tool,
                ErrorType::CanParticipantNotConfigured,
                format!(
                    "can_buses.{name} declares no shares, so it has no participant `{participant}`."
                ),
            )
            .with("bus_id", name.as_str())
            .with("participant", participant)
            .with_remediation(["Call the tool again without `participant`."])
            .not_contacted(),
        ));
    }
    Ok((name.as_str(), bus))
}

/// The status of one bus, as `can_buses_list` shows it.
pub fn status(bus_id: &str, bus: &CanBus, sessions: &Sessions) -> Value {
    let kind = adapter::effective_kind(bus);
    let enforcement = match (bus.listen_only_enforcement, kind) {
        (ListenOnlyEnforcement::Service, _) => "service",
        (_, "process") => "bridge_confirmed",
        (_, "socketcan") => "link_verified",
        _ => "driver_verified",
    };
    let mut doc = Map::new();
    doc.insert("adapter".into(), bus.adapter.as_str().into());
    doc.insert("effective_adapter".into(), kind.into());
    doc.insert("channel".into(), bus.channel.clone().into());
    doc.insert("bitrate".into(), bus.bitrate.into());
    doc.insert("fd".into(), bus.fd.into());
    doc.insert("listen_only".into(), bus.listen_only.into());
    doc.insert("listen_only_enforcement".into(), enforcement.into());
    doc.insert("max_buffer_frames".into(), bus.max_buffer_frames.into());
    doc.insert(
        "max_frame_data_bytes".into(),
        bus.max_frame_data_bytes.into(),
    );
    doc.insert("allow_write".into(), bus.permissions.allow_write.into());
    if kind == "socketcan" {
        doc.insert("bitrate_verified".into(), false.into());
        doc.insert(
            "bitrate_note".into(),
            "SocketCAN bit timing is the interface's own, set by the operator with `ip link`; this tool never sets it.".into(),
        );
    }
    if bus.shares.is_some() {
        doc.insert("shared_bus_supported".into(), false.into());
    }
    match sessions.get(bus_id) {
        Some(session) => {
            doc.insert("session_active".into(), session.bus.is_alive().into());
            doc.insert("session".into(), session.describe(true));
        }
        None => {
            doc.insert("session_active".into(), false.into());
        }
    }
    Value::Object(doc)
}

pub fn plan<'a>(ctx: &'a Context<'a>) -> Result<Plan<'a>, Box<Outcome>> {
    super::serves(ctx.tool, &[ToolId::CanBusesList])?;
    Ok(Plan {
        action: Action::ReadState,
        device: None,
        resources: Vec::new(),
        work: Work::Local(Box::new(move || {
            let buses: Map<String, Value> = ctx
                .loaded
                .config
                .can_buses
                .iter()
                .map(|(id, bus)| (id.clone(), status(id, bus, ctx.can)))
                .collect();
            let summary = if buses.is_empty() {
                "No CAN buses are configured."
            } else {
                "CAN buses listed; no adapter was opened."
            };
            Acted {
                outcome: Outcome::ok(ctx.tool, summary)
                    .with("buses", Value::Object(buses))
                    .with("supported_adapters", json!(SUPPORTED_ADAPTERS)),
                contact: None,
            }
        })),
    })
}
