//! Arguments of the typed helpers, serialized exactly as the tools' input schemas name them.

use serde::Serialize;

/// `reset_target`'s `mode`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ResetMode {
    #[default]
    Run,
    Halt,
    Init,
}

/// `debug_start_session`'s `mode`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DebugMode {
    /// Halts the running core without a reset.
    #[default]
    Attach,
    ResetHalt,
    Load,
}

/// `flash_firmware`'s options besides the image.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FlashOptions {
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub reset_after_flash: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture: Option<Capture>,
}

/// Reading a port right after the flash's reset (`flash_firmware`'s `capture`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Capture {
    pub port_id: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub until: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_timeout_s: Option<f64>,
}

/// `com_read`'s options besides the port.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ReadOptions {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_timeout_s: Option<f64>,
    /// Literal texts to wait for; the answer ends at the first match.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub until: Vec<String>,
}

impl ReadOptions {
    /// Waits up to `wait_timeout_s` for `text`.
    pub fn until(text: impl Into<String>, wait_timeout_s: f64) -> Self {
        Self {
            until: vec![text.into()],
            wait_timeout_s: Some(wait_timeout_s),
            ..Self::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn defaults_send_no_optional_argument() {
        assert_eq!(
            serde_json::to_value(FlashOptions::default()).unwrap(),
            json!({})
        );
        assert_eq!(
            serde_json::to_value(ReadOptions::default()).unwrap(),
            json!({})
        );
    }

    #[test]
    fn modes_are_spelled_as_the_schemas_spell_them() {
        assert_eq!(json!(DebugMode::ResetHalt), json!("reset_halt"));
        assert_eq!(json!(ResetMode::Halt), json!("halt"));
    }

    #[test]
    fn a_capture_names_its_port_and_texts() {
        let options = FlashOptions {
            reset_after_flash: true,
            capture: Some(Capture {
                port_id: "uart".into(),
                until: vec!["boot ok".into()],
                wait_timeout_s: Some(5.0),
            }),
        };
        assert_eq!(
            serde_json::to_value(options).unwrap(),
            json!({"reset_after_flash": true,
                   "capture": {"port_id": "uart", "until": ["boot ok"], "wait_timeout_s": 5.0}})
        );
    }
}
