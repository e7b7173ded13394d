//! pyOCD's target list (`pyocd json --targets`) and the question `doctor` asks of it: does pyOCD know
//! the configured `target_type`? Many parts (the whole STM32F4 family among them) exist only once a
//! CMSIS pack is installed, and finding that out at the first flash is too late.

use serde_json::{Value, json};

use crate::probe_cli::text;

/// One entry of pyOCD's target list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetEntry {
    pub name: String,
    pub vendor: String,
    pub part_number: String,
    /// `builtin` or `pack`.
    pub source: String,
}

/// A target name as pyOCD compares them: lowercase, runs of other characters collapsed to one `_`.
pub fn normalise_target(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut gap = false;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            out.push(c.to_ascii_lowercase());
            gap = false;
        } else if !gap {
            out.push('_');
            gap = true;
        }
    }
    out
}

/// The entries of `pyocd json --targets` output; `None` when it is not that JSON.
pub fn parse_target_entries(stdout: &str) -> Option<Vec<TargetEntry>> {
    let doc: Value = serde_json::from_str(stdout.trim()).ok()?;
    if doc.get("status")?.as_i64()? != 0 {
        return None;
    }
    doc.get("targets")?
        .as_array()?
        .iter()
        .map(|entry| {
            Some(TargetEntry {
                name: entry.get("name")?.as_str()?.to_owned(),
                vendor: text(entry, "vendor"),
                part_number: text(entry, "part_number"),
                source: text(entry, "source"),
            })
        })
        .collect()
}

/// The target names in `pyocd json --targets` output, normalised; `None` when it is not that JSON.
pub fn parse_targets(stdout: &str) -> Option<Vec<String>> {
    parse_target_entries(stdout)
        .map(|entries| entries.iter().map(|e| normalise_target(&e.name)).collect())
}

/// What pyOCD says about the configured target type.
#[derive(Debug, Clone, PartialEq)]
pub enum TargetSupport {
    /// No `target_type`: pyOCD picks the target from the probe's board id.
    NotConfigured,
    Supported {
        target_type: String,
        entry: TargetEntry,
    },
    Unsupported {
        target_type: String,
        /// Up to five known names that look like the configured one, closest first.
        close_matches: Vec<String>,
        known: usize,
    },
    /// pyOCD could not be asked (it failed, hung, or printed something else).
    Undetermined { target_type: String, reason: String },
}

impl TargetSupport {
    /// The verdict for `target_type` against a target list.
    pub fn judge(target_type: &str, entries: &[TargetEntry]) -> Self {
        let wanted = normalise_target(target_type);
        if let Some(entry) = entries.iter().find(|e| normalise_target(&e.name) == wanted) {
            return Self::Supported {
                target_type: target_type.to_owned(),
                entry: entry.clone(),
            };
        }
        let names: Vec<String> = entries.iter().map(|e| e.name.to_lowercase()).collect();
        Self::Unsupported {
            target_type: target_type.to_owned(),
            close_matches: close_matches(&wanted, &names, 5, 0.7),
            known: entries.len(),
        }
    }

    /// Only an unknown target is a failure; a question pyOCD could not answer is not.
    pub fn is_unsupported(&self) -> bool {
        matches!(self, Self::Unsupported { .. })
    }

    /// The verdict as `doctor` reports it under `debuggers.<name>.target_support`.
    pub fn to_value(&self) -> Value {
        match self {
            Self::NotConfigured => json!({
                "ok": true,
                "status": "not_configured",
                "target_type": null,
                "summary": "No target_type is configured, so pyOCD picks the target from the probe's board id. Set it to the MCU part when pyOCD does not recognise the board.",
            }),
            Self::Supported { target_type, entry } => json!({
                "ok": true,
                "status": "supported",
                "target_type": target_type,
                "source": entry.source,
                "vendor": entry.vendor,
                "part_number": entry.part_number,
                "summary": format!("pyOCD knows target_type '{target_type}' ({} list).", if entry.source == "pack" { "an installed pack's" } else { "its built-in" }),
            }),
            Self::Unsupported {
                target_type,
                close_matches,
                known,
            } => json!({
                "ok": false,
                "status": "unsupported",
                "error_type": "target_type_invalid",
                "target_type": target_type,
                "summary": format!("pyOCD does not know target_type '{target_type}'; many vendor parts (all of STM32F4) need a CMSIS pack installed first."),
                "remediation": [
                    "Check the spelling against `pyocd list --targets` (its Source column says builtin or pack).",
                    "If the part is missing, install its pack yourself, as a deliberate host setup step: the commands are in install_commands. agentic-hil never downloads a pack.",
                ],
                "install_commands": install_commands(target_type),
                "close_matches": close_matches,
                "resolved_target_types": known,
            }),
            Self::Undetermined {
                target_type,
                reason,
            } => json!({
                "ok": true,
                "status": "undetermined",
                "target_type": target_type,
                "reason": reason,
                "summary": format!("Could not ask pyOCD whether it knows target_type '{target_type}': {reason}"),
            }),
        }
    }
}

/// The pack commands an operator runs to give pyOCD a missing target.
pub fn install_commands(target_type: &str) -> Value {
    json!([
        format!("pyocd pack find {target_type}"),
        format!("pyocd pack install {target_type}"),
        "pyocd pack show",
    ])
}

/// Up to `n` of `candidates` whose similarity to `word` is at least `cutoff`, best first (ties: the
/// later name first). The similarity is Ratcliff/Obershelp's `2·M / (|a| + |b|)`, as Python's difflib
/// computes it, so the list matches what the reference prints.
pub fn close_matches(word: &str, candidates: &[String], n: usize, cutoff: f64) -> Vec<String> {
    let word: Vec<char> = word.chars().collect();
    let mut scored: Vec<(f64, &String)> = candidates
        .iter()
        .filter_map(|candidate| {
            let chars: Vec<char> = candidate.chars().collect();
            let score = similarity(&chars, &word);
            (score >= cutoff).then_some((score, candidate))
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| b.1.cmp(a.1)));
    scored.into_iter().take(n).map(|(_, c)| c.clone()).collect()
}

fn similarity(a: &[char], b: &[char]) -> f64 {
    let total = a.len() + b.len();
    if total == 0 {
        return 1.0;
    }
    #[allow(clippy::cast_precision_loss)] // names are a few dozen characters
    let ratio = 2.0 * matched(a, b) as f64 / total as f64;
    ratio
}

/// Characters in the matching blocks: the longest common run, then the same on each side of it.
fn matched(a: &[char], b: &[char]) -> usize {
    let (i, j, size) = longest_common_run(a, b);
    if size == 0 {
        return 0;
    }
    size + matched(&a[..i], &b[..j]) + matched(&a[i + size..], &b[j + size..])
}

/// The longest run common to both, earliest in `a`, then earliest in `b` (difflib's tie-break).
fn longest_common_run(a: &[char], b: &[char]) -> (usize, usize, usize) {
    let mut best = (0, 0, 0);
    // lengths[j + 1]: the common run ending at a[i - 1] and b[j].
    let mut previous = vec![0usize; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        let mut current = vec![0usize; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            if ca == cb {
                let k = previous[j] + 1;
                current[j + 1] = k;
                if k > best.2 {
                    best = (i + 1 - k, j + 1 - k, k);
                }
            }
        }
        previous = current;
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, source: &str) -> TargetEntry {
        TargetEntry {
            name: name.into(),
            vendor: "STMicroelectronics".into(),
            part_number: name.to_uppercase(),
            source: source.into(),
        }
    }

    #[test]
    fn a_listed_target_is_supported_whatever_its_case() {
        let entries = [
            entry("stm32f103rc", "builtin"),
            entry("stm32f439xi", "pack"),
        ];
        let verdict = TargetSupport::judge("STM32F439XI", &entries);
        let TargetSupport::Supported { entry, .. } = &verdict else {
            panic!("{verdict:?}");
        };
        assert_eq!(entry.source, "pack");
        assert_eq!(verdict.to_value()["status"], "supported");
    }

    #[test]
    fn an_unlisted_target_is_unsupported_with_its_pack_commands() {
        let entries = [entry("stm32f103rc", "builtin")];
        let verdict = TargetSupport::judge("stm32f405rg", &entries);
        assert!(verdict.is_unsupported());
        let value = verdict.to_value();
        assert_eq!(value["error_type"], "target_type_invalid");
        assert_eq!(
            value["install_commands"][1],
            "pyocd pack install stm32f405rg"
        );
        assert_eq!(value["resolved_target_types"], 1);
    }

    #[test]
    fn close_matches_rank_as_difflib_does() {
        // Expected values computed with Python's difflib.get_close_matches(word, names, 5, 0.7).
        let names: Vec<String> = [
            "stm32f051",
            "stm32f103rc",
            "stm32f412xe",
            "stm32f412xg",
            "stm32f429xg",
            "stm32f429xi",
            "stm32f439xg",
            "stm32f439xi",
            "stm32l475xg",
            "nrf52840",
            "cortex_m",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            close_matches("stm32f405rg", &names, 5, 0.7),
            [
                "stm32f051",
                "stm32l475xg",
                "stm32f439xg",
                "stm32f429xg",
                "stm32f412xg"
            ]
        );
        assert_eq!(close_matches("nrf52833", &names, 5, 0.7), ["nrf52840"]);
        assert!(close_matches("esp32", &names, 5, 0.7).is_empty());
    }

    #[test]
    fn the_target_list_is_read_with_its_sources() {
        let stdout = r#"{"pyocd_version": "0.46.0", "version": {"major": 1, "minor": 2}, "status": 0, "targets": [
            {"name": "stm32f103rc", "vendor": "STMicroelectronics", "part_families": [], "part_number": "STM32F103RC", "source": "builtin"}]}"#;
        let entries = parse_target_entries(stdout).expect("a target list");
        assert_eq!(entries, [entry("stm32f103rc", "builtin")]);
        assert_eq!(parse_targets(stdout).expect("names"), ["stm32f103rc"]);
        assert!(parse_target_entries(r#"{"status": 1}"#).is_none());
        assert!(parse_target_entries("Traceback").is_none());
    }
}
