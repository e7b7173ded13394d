//! The sessions a client opened and has not ended, so closing the client can end them.

use serde_json::{Map, Value};

use crate::Envelope;

/// A start tool, the stop that ends it, and the arguments that name the session.
const KINDS: [(&str, &str, &[&str]); 3] = [
    ("com_session_start", "com_session_stop", &["port_id"]),
    (
        "can_session_start",
        "can_session_stop",
        &["bus_id", "participant"],
    ),
    ("debug_start_session", "debug_stop_session", &[]),
];

/// A session to end: its stop call and whether its start was confirmed (rather than only possible).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Open {
    pub(crate) stop: &'static str,
    pub(crate) arguments: Map<String, Value>,
    pub(crate) confirmed: bool,
}

impl Open {
    /// `stop(arguments)`, for messages.
    pub(crate) fn describe(&self) -> String {
        let names: Vec<String> = self
            .arguments
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        format!("{}({})", self.stop, names.join(", "))
    }

    /// `Ok` when the stop's answer confirms the session is over; else why not.
    pub(crate) fn verdict(&self, stopped: &Envelope) -> Result<(), String> {
        // A start that failed may have opened nothing: "not active" is then the good answer.
        if !self.confirmed && stopped.error_type() == Some("session_not_active") {
            return Ok(());
        }
        if stopped.ok() && stopped.get("cleanup_required") != Some(&Value::Bool(true)) {
            return Ok(());
        }
        Err(format!(
            "{}: {}: {}",
            self.describe(),
            stopped.error_type().unwrap_or("cleanup_required"),
            stopped.summary().unwrap_or_default()
        ))
    }
}

#[derive(Debug, Default)]
pub(crate) struct Sessions {
    open: Vec<Open>,
}

impl Sessions {
    /// Remembers a session a start opened (or may have opened), forgets one a stop confirmed.
    pub(crate) fn observe(&mut self, tool: &str, arguments: &Value, answer: &Envelope) {
        if let Some((_, stop, names)) = KINDS.iter().find(|(start, _, _)| *start == tool) {
            let arguments = pick(arguments, names);
            let confirmed = answer.ok();
            // A refusal before anything was sent leaves nothing behind.
            if !confirmed && answer.str("side_effect_status") == Some("not_started") {
                return;
            }
            match self
                .open
                .iter_mut()
                .find(|o| o.stop == *stop && o.arguments == arguments)
            {
                Some(known) => known.confirmed |= confirmed,
                None => self.open.push(Open {
                    stop,
                    arguments,
                    confirmed,
                }),
            }
        } else if let Some((_, stop, names)) = KINDS.iter().find(|(_, stop, _)| *stop == tool) {
            let arguments = pick(arguments, names);
            let probe = Open {
                stop,
                arguments,
                confirmed: true,
            };
            if probe.verdict(answer).is_ok() {
                self.open
                    .retain(|o| !(o.stop == probe.stop && o.arguments == probe.arguments));
            }
        }
    }

    pub(crate) fn open(&self) -> &[Open] {
        &self.open
    }

    pub(crate) fn take(&mut self) -> Vec<Open> {
        std::mem::take(&mut self.open)
    }
}

fn pick(arguments: &Value, names: &[&str]) -> Map<String, Value> {
    names
        .iter()
        .filter_map(|name| Some(((*name).to_owned(), arguments.get(*name)?.clone())))
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_started_session_is_remembered_with_its_stop_and_forgotten_once_stopped() {
        let mut sessions = Sessions::default();
        let port = json!({"port_id": "uart", "clear_buffer": false});
        sessions.observe(
            "com_session_start",
            &port,
            &Envelope::answer(json!({"ok": true})),
        );
        assert_eq!(
            sessions.open()[0].describe(),
            "com_session_stop(port_id=\"uart\")"
        );
        sessions.observe(
            "com_session_stop",
            &json!({"port_id": "other"}),
            &Envelope::answer(json!({"ok": true})),
        );
        assert_eq!(
            sessions.open().len(),
            1,
            "another port's stop ends nothing here"
        );
        sessions.observe(
            "com_session_stop",
            &port,
            &Envelope::answer(json!({"ok": true})),
        );
        assert!(sessions.open().is_empty());
    }

    #[test]
    fn a_refused_start_that_sent_nothing_leaves_nothing_to_end() {
        let mut sessions = Sessions::default();
        let refused = Envelope::answer(json!({"ok": false, "error_type": "permission_denied",
            "side_effect_status": "not_started"}));
        sessions.observe(
            "debug_start_session",
            &json!({"image_path": "a.elf"}),
            &refused,
        );
        assert!(sessions.open().is_empty());
    }

    #[test]
    fn a_start_with_an_unknown_effect_is_ended_and_not_active_then_counts_as_ended() {
        let mut sessions = Sessions::default();
        let unknown = Envelope::answer(json!({"ok": false, "side_effect_status": "unknown"}));
        sessions.observe("debug_start_session", &json!({}), &unknown);
        let open = sessions.take();
        assert_eq!(open.len(), 1);
        assert!(!open[0].confirmed);
        let not_active = Envelope::answer(json!({"ok": false, "error_type": "session_not_active"}));
        assert_eq!(open[0].verdict(&not_active), Ok(()));
    }

    #[test]
    fn a_stop_that_fails_or_leaves_cleanup_pending_is_not_confirmed() {
        let open = Open {
            stop: "can_session_stop",
            arguments: pick(&json!({"bus_id": "can0"}), &["bus_id", "participant"]),
            confirmed: true,
        };
        for stopped in [
            json!({"ok": false, "error_type": "device_busy", "summary": "held"}),
            json!({"ok": true, "cleanup_required": true, "summary": "pending"}),
            json!({"ok": false, "error_type": "session_not_active", "summary": "gone"}),
        ] {
            let verdict = open.verdict(&Envelope::answer(stopped.clone()));
            assert!(verdict.is_err(), "{stopped}");
            assert!(
                verdict
                    .unwrap_err()
                    .starts_with("can_session_stop(bus_id=\"can0\"): ")
            );
        }
    }
}
