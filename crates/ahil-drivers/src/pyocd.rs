//! pyOCD as a one-shot CLI: `json --probes` to list, `commander` for status and resets, `flash` to
//! program. Every command that would otherwise wait for a probe to appear gets `-W`, so a missing probe
//! fails at once instead of running into the timeout.
//!
//! pyOCD prints no success text, so success is exit 0 with nothing that reads as a failure. A
//! configured `probe_id` is resolved to one full UID by listing first, so `--uid` never picks a probe
//! by prefix behind our back.

use std::ffi::OsString;
use std::time::Duration;

use serde_json::{Value, json};

use crate::Backend;
use crate::error::{Contact, DriverError};
use crate::probe::{Budget, DebugProbe, FlashRequest, ImageFormat, ResetMode};
use crate::probe_cli::{
    self, CliAnswers, CliSettings, CliSuccess, Listing, Ran, Reading, any, failure,
};

mod targets;
pub use targets::{
    TargetEntry, TargetSupport, close_matches, normalise_target, parse_target_entries,
    parse_targets,
};

/// Listing targets loads every pack pyOCD knows; it gets at least this long.
const TARGET_LIST_TIMEOUT: Duration = Duration::from_secs(30);

/// The pyOCD backend of one debugger entry.
#[derive(Debug, Clone)]
pub struct PyOcd {
    settings: CliSettings,
    target_type: Option<String>,
    others: Vec<OtherSelector>,
}

/// Another configured debugger's probe selector, which the chosen UID must not also answer to.
#[derive(Debug, Clone)]
pub struct OtherSelector {
    /// The other entry's name.
    pub debugger: String,
    /// Its `probe_id`.
    pub probe_id: String,
    /// pyOCD entries select by substring; others name a probe exactly.
    pub by_substring: bool,
}

impl OtherSelector {
    fn claims(&self, uid: &str) -> bool {
        let uid = uid.to_lowercase();
        let mine = self
            .probe_id
            .split_once(':')
            .map_or(self.probe_id.as_str(), |(_, rest)| rest)
            .to_lowercase();
        if self.by_substring {
            uid.contains(&mine)
        } else {
            uid == mine
        }
    }
}

/// pyOCD's output, sorted into the backend classes (first match wins).
pub fn classify(output: &str, flashing: bool) -> &'static str {
    let lower = output.to_lowercase();
    if any(
        &lower,
        &[
            "no available debug probes",
            "no debug probes are connected",
            "no connected debug probes",
            "unable to open probe",
            "probe not found",
            "no probe with uid",
        ],
    ) {
        return "probe_not_found";
    }
    if any(
        &lower,
        &[
            "unable to connect",
            "failed to connect",
            "target is not responding",
            "no ack received",
            "error connecting",
        ],
    ) {
        return "target_not_detected";
    }
    if any(
        &lower,
        &[
            "unknown target type",
            "no target type",
            "target type is not",
            "target_support.html",
        ],
    ) || (lower.contains("target type") && lower.contains("not recognized"))
    {
        return "target_type_invalid";
    }
    if lower.contains("verify") && any(&lower, &["failed", "mismatch", "error"]) {
        return "verify_failed";
    }
    if lower.contains("reset") && any(&lower, &["failed", "error"]) {
        return "reset_failed";
    }
    if flashing && any(&lower, &["failed", "error"]) {
        return "flash_failed";
    }
    "unknown_debugger_error"
}

/// The UIDs in `pyocd json --probes` output, deduplicated in order; `None` when it is not that JSON.
pub fn parse_probes(stdout: &str) -> Option<Vec<String>> {
    let doc: Value = serde_json::from_str(stdout.trim()).ok()?;
    if doc.get("status")?.as_i64()? != 0 {
        return None;
    }
    let mut uids: Vec<String> = Vec::new();
    for board in doc.get("boards")?.as_array()? {
        let uid = board.get("unique_id")?.as_str()?.to_owned();
        if !uids.contains(&uid) {
            uids.push(uid);
        }
    }
    Some(uids)
}

/// The one UID `probe_id` selects among `uids`, or why none is safe to use.
pub fn select_uid(probe_id: &str, uids: &[String]) -> Result<String, &'static str> {
    let needle = probe_id
        .split_once(':')
        .map_or(probe_id, |(_, rest)| rest)
        .to_lowercase();
    let matches: Vec<&String> = uids
        .iter()
        .filter(|uid| uid.to_lowercase().contains(&needle))
        .collect();
    match matches.as_slice() {
        [] => Err("no connected probe matches the configured probe_id"),
        [one] => {
            let lower = one.to_lowercase();
            let shadowed = uids
                .iter()
                .any(|other| *other != **one && other.to_lowercase().contains(&lower));
            if shadowed {
                Err("the matching probe's UID is part of another connected probe's UID")
            } else {
                Ok((*one).clone())
            }
        }
        _ => Err("the configured probe_id matches more than one connected probe"),
    }
}

impl PyOcd {
    /// A backend over the pinned executable; `target_type` is the entry's pyOCD target name.
    pub fn new(settings: CliSettings, target_type: Option<&str>) -> Self {
        Self {
            settings,
            target_type: target_type.map(str::to_owned),
            others: Vec::new(),
        }
    }

    /// The selectors of the other configured debuggers.
    #[must_use]
    pub fn with_others(mut self, others: Vec<OtherSelector>) -> Self {
        self.others = others;
        self
    }

    fn run(
        &self,
        args: Vec<OsString>,
        limit: Duration,
        budget: &Budget,
    ) -> Result<Ran, DriverError> {
        probe_cli::run(
            &self.settings.executable,
            args,
            limit,
            budget,
            "pyocd_not_found",
        )
    }

    /// Whether pyOCD knows the configured target type, from its target list; opens no probe.
    pub fn target_support(&self, budget: &Budget) -> TargetSupport {
        let Some(target_type) = self.target_type.clone() else {
            return TargetSupport::NotConfigured;
        };
        let undetermined = |reason: String| TargetSupport::Undetermined {
            target_type: target_type.clone(),
            reason,
        };
        let ran = match self.run(
            vec!["json".into(), "--targets".into(), "--no-config".into()],
            self.settings.timeout.max(TARGET_LIST_TIMEOUT),
            budget,
        ) {
            Ok(ran) => ran,
            Err(error) => return undetermined(error.to_string()),
        };
        if ran.timed_out() {
            return undetermined("listing targets ran past its timeout".into());
        }
        if ran.code() != Some(0) {
            let said = ran
                .transcript
                .stderr
                .lines()
                .rev()
                .find(|line| !line.trim().is_empty())
                .unwrap_or("no output")
                .trim()
                .to_owned();
            return undetermined(format!("`pyocd json --targets` failed: {said}"));
        }
        match parse_target_entries(&ran.transcript.stdout) {
            Some(entries) => TargetSupport::judge(&target_type, &entries),
            None => undetermined("its target list was not the JSON pyOCD prints".into()),
        }
    }

    fn uids(&self, budget: &Budget) -> Result<(Vec<String>, Ran), DriverError> {
        let ran = self.run(
            vec!["json".into(), "--probes".into(), "--no-config".into()],
            self.settings.timeout,
            budget,
        )?;
        let no_contact = || Contact::none("listing probes opens no target");
        if ran.timed_out() {
            return Err(probe_cli::timed_out(ran, no_contact()));
        }
        match (ran.code(), parse_probes(&ran.transcript.stdout)) {
            (Some(0), Some(uids)) => Ok((uids, ran)),
            _ => Err(DriverError::Classified(failure(
                "probe_discovery_failed",
                no_contact(),
                vec![ran.transcript],
            ))),
        }
    }

    /// `--uid <full uid>` and `--target <type>` as configured.
    fn selection(&self, budget: &Budget) -> Result<Vec<OsString>, DriverError> {
        let mut args: Vec<OsString> = Vec::new();
        if let Some(probe_id) = &self.settings.probe_id {
            let (uids, ran) = self.uids(budget)?;
            let chosen = select_uid(probe_id, &uids);
            if let Ok(uid) = &chosen
                && let Some(other) = self.others.iter().find(|o| o.claims(uid))
            {
                let mut failed = failure(
                    "probe_not_found",
                    Contact::none("the probe was chosen by listing, before any target was opened"),
                    vec![ran.transcript],
                );
                failed.summary = format!(
                    "Probe selection is not unambiguous: the probe this entry selects is also selected by debugger `{}`.",
                    other.debugger
                );
                failed
                    .details
                    .insert("configured_probe_id".into(), json!(probe_id));
                failed
                    .details
                    .insert("candidate_probe_ids".into(), json!([uid]));
                failed
                    .details
                    .insert("other_debugger".into(), json!(other.debugger));
                failed
                    .details
                    .insert("other_probe_id".into(), json!(other.probe_id));
                failed.details.insert("retry_safe".into(), json!(false));
                return Err(DriverError::Classified(failed));
            }
            match chosen {
                Ok(uid) => {
                    args.push("--uid".into());
                    args.push(uid.into());
                }
                Err(why) => {
                    let mut failed = failure(
                        "probe_not_found",
                        Contact::none(
                            "the probe was chosen by listing, before any target was opened",
                        ),
                        vec![ran.transcript],
                    );
                    failed.summary = format!("Probe selection is not unambiguous: {why}.");
                    failed
                        .details
                        .insert("configured_probe_id".into(), json!(probe_id));
                    failed
                        .details
                        .insert("candidate_probe_ids".into(), json!(uids));
                    failed.details.insert("retry_safe".into(), json!(false));
                    return Err(DriverError::Classified(failed));
                }
            }
        }
        if let Some(target) = &self.target_type {
            args.push("--target".into());
            args.push(target.into());
        }
        Ok(args)
    }

    fn commander(
        &self,
        command: &str,
        selection: &[OsString],
        budget: &Budget,
    ) -> Result<Ran, DriverError> {
        let mut args: Vec<OsString> = vec![
            "commander".into(),
            "-W".into(),
            "--command".into(),
            command.into(),
        ];
        args.extend(selection.iter().cloned());
        self.run(args, self.settings.timeout, budget)
    }

    /// Success, or the classified failure of one run. `read_only` calls treat an unresponsive target as
    /// proof that nothing changed.
    fn judge(
        &self,
        ran: Ran,
        flashing: bool,
        read_only: bool,
        budget: &Budget,
    ) -> Result<CliSuccess, DriverError> {
        let output = ran.output();
        let class = classify(&output, flashing);
        let pre_contact = matches!(class, "probe_not_found" | "target_type_invalid")
            || (read_only && class == "target_not_detected");
        let proof = "pyOCD's own words say it never opened the target";
        let (ran, contact) = match probe_cli::read(ran, &output, class, pre_contact, proof)? {
            Reading::Clean(ran) => {
                return Ok(CliSuccess {
                    transcripts: vec![ran.transcript],
                    warnings: Vec::new(),
                    matched_success_text: Vec::new(),
                });
            }
            Reading::Failed(ran, contact) => (ran, contact),
        };
        let failed_exit = ran.code() != Some(0);
        let mut transcripts = vec![ran.transcript];
        let mut class = class;
        let mut contact = contact;
        // pyOCD's words for an unknown target vary by command; when they named nothing we know, ask
        // it for its target list and check the configured name against it.
        if failed_exit
            && class == "unknown_debugger_error"
            && let Some(target) = &self.target_type
            && let Ok(listed) = self.run(
                vec!["json".into(), "--targets".into(), "--no-config".into()],
                self.settings.timeout.max(TARGET_LIST_TIMEOUT),
                budget,
            )
        {
            let known = (listed.code() == Some(0))
                .then(|| parse_targets(&listed.transcript.stdout))
                .flatten();
            transcripts.push(listed.transcript);
            if known.is_some_and(|names| !names.contains(&normalise_target(target))) {
                class = "target_type_invalid";
                contact = Contact::none(
                    "pyOCD does not know the configured target type, so it opened none",
                );
            }
        }
        let mut failed = failure(class, contact, transcripts);
        if class == "target_type_invalid"
            && let Some(target) = &self.target_type
        {
            failed
                .details
                .insert("install_commands".into(), targets::install_commands(target));
        }
        Err(DriverError::Classified(failed))
    }
}

impl DebugProbe for PyOcd {
    type Answers = CliAnswers;

    fn kind(&self) -> Backend {
        Backend::PyOcd
    }

    fn list_probes(&self, budget: &Budget) -> Result<Listing, DriverError> {
        let (uids, ran) = self.uids(budget)?;
        Ok(Listing::complete(uids, "pyOCD probe", ran.transcript))
    }

    fn probe(&self, budget: &Budget) -> Result<CliSuccess, DriverError> {
        let selection = self.selection(budget)?;
        let ran = self.commander("status", &selection, budget)?;
        self.judge(ran, false, true, budget)
    }

    fn flash(&self, request: &FlashRequest, budget: &Budget) -> Result<CliSuccess, DriverError> {
        let selection = self.selection(budget)?;
        let mut args: Vec<OsString> = vec!["flash".into(), "-W".into(), "--no-reset".into()];
        args.extend(selection.iter().cloned());
        if let ImageFormat::Bin { base } = request.format {
            args.push("--base-address".into());
            args.push(format!("{base:#x}").into());
        }
        args.push(request.image.clone().into_os_string());
        let ran = self.run(args, self.settings.timeout, budget)?;
        let mut done = self.judge(ran, true, false, budget)?;
        if let Some(mode) = request.reset {
            let ran = self.commander(reset_command(mode), &selection, budget)?;
            match self.judge(ran, false, false, budget) {
                Ok(more) => done.transcripts.extend(more.transcripts),
                Err(DriverError::Classified(mut failed)) => {
                    let mut transcripts = done.transcripts;
                    transcripts.append(&mut failed.transcripts);
                    failed.transcripts = transcripts;
                    failed.error_type = "reset_failed";
                    failed.summary = "Firmware flashed, but the post-flash reset failed.".into();
                    failed.contact = Contact::Made;
                    failed.details.insert("image_written".into(), json!(true));
                    return Err(DriverError::Classified(failed));
                }
                Err(other) => return Err(other),
            }
        }
        Ok(done)
    }

    fn reset(&self, mode: ResetMode, budget: &Budget) -> Result<CliSuccess, DriverError> {
        if mode == ResetMode::Init {
            return Err(init_not_supported("pyOCD"));
        }
        let selection = self.selection(budget)?;
        let ran = self.commander(reset_command(mode), &selection, budget)?;
        self.judge(ran, false, false, budget)
    }
}

fn reset_command(mode: ResetMode) -> &'static str {
    match mode {
        ResetMode::Run => "reset",
        _ => "reset halt",
    }
}

/// `reset_target` mode `init` on a backend without OpenOCD's init scripts.
pub fn init_not_supported(product: &str) -> DriverError {
    let mut details = serde_json::Map::new();
    details.insert("mode".into(), json!("init"));
    details.insert("supported_modes".into(), json!(["run", "halt"]));
    probe_cli::not_supported(
        &format!("Reset mode 'init' runs OpenOCD's reset-init scripts; {product} has none."),
        details,
    )
}

#[cfg(test)]
#[path = "pyocd_tests.rs"]
mod tests;
