//! `can_buses_list`, and the lookups every CAN tool shares: the bus entry, its policy device, and the
//! participant of a shared bus.

use super::args::Args;
use crate::ErrorType;
use crate::catalogue::ToolId;
use ahil_config::{CanBus, CanShare, ListenOnlyEnforcement};
use serde_json::{Map, Value, json};

use super::{Acted, Context, Plan, Work};
use crate::can::{Sessions, adapter, broker};
use crate::envelope::Outcome;
use crate::policy::{Device, Share};

/// The adapters a configuration may name.
pub const SUPPORTED_ADAPTERS: [&str; 3] = ["peak", "socketcan", "process"];

/// The policy device of a bus, addressed as no participant.
pub fn device<'a>(bus_id: &'a str, bus: &CanBus) -> Device<'a> {
    Device::CanBus {
        name: bus_id,
        grants: bus.permissions,
        share: None,
    }
}

/// The policy device of a bus addressed as `participant` (its share narrows the bus's grants).
pub fn shared_device<'a>(
    bus_id: &'a str,
    bus: &CanBus,
    share: Option<(&'a str, &CanShare)>,
) -> Device<'a> {
    Device::CanBus {
        name: bus_id,
        grants: bus.permissions,
        share: share.map(|(name, share)| Share {
            name,
            grants: share.permissions,
        }),
    }
}

/// The bus a CAN call addresses: its entry and, on a bus with `shares`, the participant.
pub struct Entry<'a> {
    pub bus_id: &'a str,
    pub bus: &'a CanBus,
    pub share: Option<(&'a str, &'a CanShare)>,
}

impl<'a> Entry<'a> {
    /// The lock this call's session holds: the bus's own, or the participant's on a shared bus
    /// (whose bus lock the broker holds).
    pub fn lock_key(&self) -> String {
        match self.share {
            Some((participant, _)) => broker::participant_lock(&self.bus.lock_key(), participant),
            None => self.bus.lock_key(),
        }
    }

    /// The policy device this call addresses: the bus, as its participant on a shared bus.
    pub fn device(&self) -> Device<'a> {
        shared_device(self.bus_id, self.bus, self.share)
    }

    /// The key of this call's session in the gate's table.
    pub fn session_key(&self) -> String {
        crate::can::session_key(self.bus_id, self.share.map(|(name, _)| name))
    }
}

/// The `can_buses` entry named by `bus_id` (and its participant), or the refusal for this call. On
/// a shared bus a start must name its participant; later calls may leave it out while this server
/// is exactly one participant of the bus.
pub fn bus_entry<'a>(ctx: &'a Context<'a>) -> Result<Entry<'a>, Box<Outcome>> {
    let bus_id = ctx.args.arg_str("bus_id").unwrap_or("");
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
    // Every refusal past this point is about the named bus's participants.
    let refused = |error_type, summary: String| {
        Outcome::refused(ctx.tool, error_type, summary).with("bus_id", name.as_str())
    };
    let named = ctx.args.arg_str("participant");
    let Some(shares) = &bus.shares else {
        if let Some(participant) = named {
            return Err(Box::new(
                refused(
                    ErrorType::CanParticipantNotConfigured,
                    format!(
                        "can_buses.{name} declares no shares, so it has no participant `{participant}`."
                    ),
                )
                .with("participant", participant)
                .with_remediation(["Call the tool again without `participant`."])
                .not_contacted(),
            ));
        }
        return Ok(Entry {
            bus_id: name,
            bus,
            share: None,
        });
    };
    let configured: Vec<&str> = shares.keys().map(String::as_str).collect();
    let name_one = |outcome: Outcome| {
        Box::new(
            outcome
                .with("configured_participants", json!(configured))
                .with_remediation([
                    "Call the tool again with `participant` set to one of configured_participants.",
                ])
                .not_contacted(),
        )
    };
    let open: Vec<String> = crate::can::sessions_on(&ctx.can, name)
        .iter()
        .filter_map(|session| session.participant.clone())
        .collect();
    let participant = match (named, open.as_slice()) {
        (Some(p), _) => p.to_owned(),
        (None, [only]) if ctx.tool != ToolId::CanSessionStart => only.clone(),
        (None, _) => {
            return Err(name_one(refused(
                ErrorType::CanParticipantRequired,
                format!("can_buses.{name} is shared; name the participant this agent is."),
            )));
        }
    };
    let Some((share_name, share)) = shares.get_key_value(participant.as_str()) else {
        return Err(name_one(
            refused(
                ErrorType::CanParticipantNotConfigured,
                format!("can_buses.{name}.shares has no participant `{participant}`."),
            )
            .with("participant", participant.as_str()),
        ));
    };
    Ok(Entry {
        bus_id: name,
        bus,
        share: Some((share_name, share)),
    })
}

/// The status of one bus, as `can_buses_list` shows it.
pub fn status(bus_id: &str, bus: &CanBus, sessions: &Sessions, home: &std::path::Path) -> Value {
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
    if let Some(shares) = &bus.shares {
        doc.insert("shares".into(), json!(shares));
        doc.insert("shares_declared".into(), true.into());
        doc.insert("participant_sessions".into(), true.into());
        doc.insert("session_takes_whole_bus".into(), false.into());
        doc.insert(
            "active_participants".into(),
            json!(broker::client::attached(home, &bus.lock_key())),
        );
    }
    let open = crate::can::sessions_on(sessions, bus_id);
    doc.insert(
        "session_active".into(),
        open.iter().any(|session| session.bus.is_alive()).into(),
    );
    if let [only] = open.as_slice() {
        doc.insert("session".into(), only.describe(true));
    }
    if bus.shares.is_some() && !open.is_empty() {
        // This server may be several participants of the bus: each has its own session.
        let by_participant: Map<String, Value> = open
            .iter()
            .map(|session| {
                let name = session.participant.clone().unwrap_or_default();
                (name, session.describe(true))
            })
            .collect();
        doc.insert("sessions".into(), Value::Object(by_participant));
    }
    Value::Object(doc)
}

pub fn plan<'a>(ctx: &'a Context<'a>) -> Result<Plan<'a>, Box<Outcome>> {
    super::serves(ctx.tool, &[ToolId::CanBusesList])?;
    Ok(Plan::read_state(Work::Local(Box::new(move || {
        let buses: Map<String, Value> = ctx
            .loaded
            .config
            .can_buses
            .iter()
            .map(|(id, bus)| {
                (
                    id.clone(),
                    status(id, bus, &ctx.can, &ctx.env.account_home()),
                )
            })
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
    }))))
}
