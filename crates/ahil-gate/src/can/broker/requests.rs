//! The broker's answers to an attached participant: send, read, drain, status.

use std::sync::PoisonError;
use std::time::{Duration, Instant};

use ahil_drivers::can::Frame;
use ahil_drivers::can::bus::take_ready;
use serde_json::{Map, Value, json};

use super::filter_accepts;
use super::server::{Broker, Part, contact_word};
use super::wire::refusal;

/// The longest a single read request waits; participants ask again for longer waits.
const MAX_READ_WAIT: Duration = Duration::from_secs(1);

impl Broker {
    fn refuse_aborted(part: &Part) -> Option<Value> {
        part.aborted.as_ref().map(|(error_type, summary)| {
            let mut refused = refusal(error_type, summary.clone());
            refused["contact"] = json!("none");
            refused
        })
    }

    /// A send: the participant's own rules first (listen-only, grant, filter, size, budget), then
    /// the adapter, then the frame to every other participant that accepts it.
    pub(super) fn send(&self, participant: &str, message: &Map<String, Value>) -> Value {
        let Some(frame) = message.get("frame").and_then(Frame::from_bridge) else {
            return refusal("invalid_argument", "the frame is malformed");
        };
        let bus = &self.spec.bus;
        {
            let mut state = self.state();
            let Some(part) = state.parts.get_mut(participant) else {
                return refusal("session_not_active", "the participant is not attached");
            };
            if let Some(refused) = Self::refuse_aborted(part) {
                return refused;
            }
            let refused = if bus.listen_only {
                Some((
                    "can_listen_only_mode",
                    "the bus is listen-only; nothing may be sent on it".to_owned(),
                ))
            } else if !part.writes {
                Some((
                    "permission_denied",
                    format!("participant `{participant}` may not write"),
                ))
            } else if !filter_accepts(&part.share.filter, &frame) {
                Some((
                    "can_participant_filter_violation",
                    format!(
                        "identifier {:#x} is outside participant `{participant}`'s filter",
                        frame.id
                    ),
                ))
            } else if frame.data.len() > usize::from(bus.max_frame_data_bytes) {
                Some((
                    "invalid_argument",
                    format!(
                        "{} bytes exceed max_frame_data_bytes {}",
                        frame.data.len(),
                        bus.max_frame_data_bytes
                    ),
                ))
            } else if part.frames_used >= part.share.max_frames {
                Some((
                    "can_participant_frame_budget_exhausted",
                    format!(
                        "participant `{participant}` used its budget of {} frames",
                        part.share.max_frames
                    ),
                ))
            } else {
                None
            };
            if let Some((error_type, summary)) = refused {
                let mut refused = refusal(error_type, summary);
                refused["contact"] = json!("none");
                refused["frames_used"] = json!(part.frames_used);
                refused["max_frames"] = json!(part.share.max_frames);
                return refused;
            }
            // Counted before the send, so two sends racing cannot both take the last frame.
            part.frames_used += 1;
        }
        let result = self.bus.send(&frame);
        let mut state = self.state();
        let (used, max) = state
            .parts
            .get(participant)
            .map_or((0, 0), |p| (p.frames_used, p.share.max_frames));
        match result {
            Ok(adapter_result) => {
                let (seq, delivered, overflowed) =
                    self.fan_out(&mut state, &frame, Some(participant));
                drop(state);
                self.changed.notify_all();
                let _ = self.audit.append_event(
                    &self.log_name,
                    &json!({"event": "frame", "seq": seq, "direction": "tx", "participant": participant, "frame": frame.to_json(), "delivered_to": delivered, "overflowed_participants": overflowed}),
                );
                json!({"ok": true, "message": "sent", "frame_seq": seq, "frames_used": used, "max_frames": max, "adapter_result": adapter_result})
            }
            Err(error) => {
                drop(state);
                let _ = self.audit.append_event(
                    &self.log_name,
                    &json!({"event": "frame", "direction": "tx", "participant": participant, "frame": frame.to_json(), "ok": false, "error_type": error.public_error_type()}),
                );
                let mut refused = refusal(&error.public_error_type(), error.to_string());
                refused["contact"] = json!(contact_word(&error.contact()));
                refused
            }
        }
    }

    /// Frames from the participant's own queue, waiting (at most [`MAX_READ_WAIT`]) for the first
    /// or for an `until` identifier.
    pub(super) fn read(&self, participant: &str, message: &Map<String, Value>) -> Value {
        let max = message
            .get("max_frames")
            .and_then(Value::as_u64)
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(1)
            .max(1);
        let wait =
            Duration::from_millis(message.get("wait_ms").and_then(Value::as_u64).unwrap_or(0))
                .min(MAX_READ_WAIT);
        let until: Vec<u32> = message
            .get("until")
            .and_then(Value::as_array)
            .map(|ids| {
                ids.iter()
                    .filter_map(|v| v.as_u64().and_then(|n| u32::try_from(n).ok()))
                    .collect()
            })
            .unwrap_or_default();
        let deadline = Instant::now() + wait;
        let (mut frames, mut matched) = (Vec::new(), false);
        let mut state = self.state();
        loop {
            let Some(part) = state.parts.get_mut(participant) else {
                return refusal("session_not_active", "the participant is not attached");
            };
            let done = take_ready(&mut part.queue, &mut frames, &mut matched, max, &until);
            let now = Instant::now();
            if done || now >= deadline || part.aborted.is_some() {
                let mut reply = json!({
                    "ok": true,
                    "frames": frames.iter().map(Frame::to_json).collect::<Vec<_>>(),
                    "matched": matched,
                    "remaining": part.queue.len(),
                    "received": part.received,
                    "frames_used": part.frames_used,
                });
                if let Some((error_type, summary)) = &part.aborted {
                    reply["aborted"] = json!({"error_type": error_type, "summary": summary});
                }
                return reply;
            }
            state = self
                .changed
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    pub(super) fn drain(&self, participant: &str) -> Value {
        let mut state = self.state();
        let drained = state.parts.get_mut(participant).map_or(0, |p| {
            let n = p.queue.len();
            p.queue.clear();
            n
        });
        json!({"ok": true, "drained": drained})
    }

    /// The bus (and, for an attached peer, its own queue).
    pub(super) fn status(&self, participant: Option<&str>) -> Value {
        let state = self.state();
        let mut reply = json!({
            "ok": true,
            "broker_pid": std::process::id(),
            "attached_participants": state.parts.keys().collect::<Vec<_>>(),
            "bus_alive": state.incident.is_none() && !state.stopping,
            "bus_frame_log": self.log_path,
        });
        if let Some(part) = participant.and_then(|p| state.parts.get(p)) {
            reply["queued"] = json!(part.queue.len());
            reply["received"] = json!(part.received);
            reply["frames_used"] = json!(part.frames_used);
            reply["max_frames"] = json!(part.share.max_frames);
            if let Some((error_type, summary)) = &part.aborted {
                reply["aborted"] = json!({"error_type": error_type, "summary": summary});
            }
        }
        reply
    }
}
