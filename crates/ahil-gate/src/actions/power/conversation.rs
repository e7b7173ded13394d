//! One call's conversation with the supply: identity, readings, the write and its read-back.

#[allow(clippy::wildcard_imports)]
use super::*;

/// One call's conversation, owned so the blocking job can carry it.
pub(super) struct Job {
    pub(super) tool: String,
    pub(super) supply_id: String,
    pub(super) entry: PowerSupply,
    pub(super) model: &'static Model,
    pub(super) port_id: String,
    pub(super) device: Option<String>,
    /// The node `device` led to when this call's claim was taken: what is opened.
    pub(super) node: Option<String>,
    pub(super) expected: Option<identity::Expected>,
    pub(super) serials: Vec<String>,
    pub(super) request: Request,
    pub(super) timeout: Duration,
}

/// What the conversation learnt so far, for the results.
#[derive(Default)]
pub(super) struct Seen {
    pub(super) model: Option<String>,
    pub(super) firmware: Option<String>,
    pub(super) last: Option<(Reading, String)>,
}

impl Seen {
    /// When the last reading was taken (empty before any).
    fn last_at(&self) -> String {
        self.last
            .as_ref()
            .map(|(_, at)| at.clone())
            .unwrap_or_default()
    }
}

/// How a switched output is named in a summary.
fn on_off(on: bool) -> &'static str {
    if on { "on" } else { "off" }
}

impl Job {
    pub(super) fn run(self, cancel: &CancelFlag) -> Acted {
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
            crate::actions::com_ports::host_ports,
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

    pub(super) fn read(
        psu: &mut Rs3005p<ahil_drivers::psu::korad::SerialLink>,
        seen: &mut Seen,
        channel: u8,
    ) -> Result<Reading, PsuError> {
        let reading = psu.read(channel)?;
        seen.last = Some((reading.clone(), ahil_config::time::now_millis()));
        Ok(reading)
    }

    pub(super) fn channels(&self) -> Vec<u8> {
        (1..=self.model.capabilities.channels).collect()
    }

    /// The fields every answer from a unit carries.
    pub(super) fn base(&self, outcome: Outcome, seen: &Seen, channel: Option<u8>) -> Outcome {
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

    pub(super) fn status(
        &self,
        psu: &mut Rs3005p<ahil_drivers::psu::korad::SerialLink>,
        seen: &mut Seen,
        channel: Option<u8>,
    ) -> Result<Acted, PsuError> {
        let wanted = channel.map_or_else(|| self.channels(), |c| vec![c]);
        let mut docs = Vec::new();
        for &c in &wanted {
            let reading = Self::read(psu, seen, c)?;
            let at = seen.last_at();
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
        Ok(Acted::new(
            outcome,
            Contact::none("a status call sends only queries"),
        ))
    }

    /// A stored set point above its limit refuses switching on (and a set that leaves it there).
    pub(super) fn stored_above_limit(
        &self,
        reading: &Reading,
        skip: &[Quantity],
    ) -> Option<Outcome> {
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

    pub(super) fn set(
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
        Ok(self.committed_with_reading(outcome, seen, channel, &after))
    }

    pub(super) fn output(
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
        let summary = format!(
            "Switched the output of power supply '{}' channel {channel} {}; the state read back.",
            self.supply_id,
            on_off(on)
        );
        self.switch_and_confirm(
            psu,
            seen,
            channel,
            on,
            summary,
            ("was_on", before.output_on.into()),
        )
    }

    /// An output change's last switch and its proof: the switch compared, then the channel read
    /// back into the committed result `summary` describes, `extra` after the two states.
    fn switch_and_confirm(
        &self,
        psu: &mut Rs3005p<ahil_drivers::psu::korad::SerialLink>,
        seen: &mut Seen,
        channel: u8,
        on: bool,
        summary: String,
        (key, value): (&str, Value),
    ) -> Result<Acted, PsuError> {
        if let Some(mismatch) = self.switch(psu, seen, channel, on)? {
            return Ok(mismatch);
        }
        let after = Self::read(psu, seen, channel)?;
        let outcome = Outcome::ok(&self.tool, summary)
            .with("requested", json!({"output_on": on}))
            .with("read_back", json!({"output_on": after.output_on}))
            .with(key, value);
        Ok(self.committed_with_reading(outcome, seen, channel, &after))
    }

    /// Switches and compares; `Some` is the mismatch result.
    pub(super) fn switch(
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
                on_off(on),
                on_off(state)
            ),
        )
        .with("requested", json!({"output_on": on}))
        .with("read_back", json!({"output_on": state}));
        Ok(Some(Self::partial(self.base(outcome, seen, Some(channel)))))
    }

    pub(super) fn cycle(
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
        let summary = format!(
            "Cycled power supply '{}' channel {channel}: off, {} s, on; each state read back.",
            self.supply_id,
            json_number(off.as_secs_f64())
        );
        self.switch_and_confirm(
            psu,
            seen,
            channel,
            true,
            summary,
            ("off_s", off.as_secs_f64().into()),
        )
    }

    /// A write that took and was read back: every acting request ends here, with the reading that proves it.
    fn committed_with_reading(
        &self,
        outcome: Outcome,
        seen: &Seen,
        channel: u8,
        after: &Reading,
    ) -> Acted {
        let outcome = self
            .base(outcome, seen, Some(channel))
            .with(
                "measured",
                json!({"voltage_v": after.measured_voltage.render(), "current_a": after.measured_current.render()}),
            )
            .with("channels", json!([reading_doc(after, &seen.last_at())]));
        Self::committed(outcome)
    }

    pub(super) fn committed(mut outcome: Outcome) -> Acted {
        outcome.side_effect_committed = Some(true);
        outcome.side_effect_status = Some(SideEffectStatus::Committed);
        outcome.retry_safe = Some(false);
        Acted::new(outcome, Contact::Made)
    }

    /// A write that took, but not to the value asked: known to have changed the unit.
    pub(super) fn partial(mut outcome: Outcome) -> Acted {
        outcome.side_effect_committed = Some(true);
        outcome.side_effect_status = Some(SideEffectStatus::Partial);
        outcome.retry_safe = Some(false);
        outcome = outcome
            .with_remediation([
                "Report `requested` and `read_back`, then call power_supply_status to read the whole channel.",
                "A supply that does not hold what it was told is for the operator to look at.",
            ])
            .with_do_not(["Do not write an offset value to land on the request, and do not retry in a loop."]);
        Acted::new(outcome, Contact::Made)
    }

    pub(super) fn queries_only(outcome: Outcome) -> Acted {
        Acted {
            outcome: outcome.not_contacted(),
            contact: Some(Contact::none(
                "only queries were sent, and they change nothing",
            )),
        }
    }

    pub(super) fn no_contact(&self, outcome: Outcome, proof: &str) -> Acted {
        let outcome = outcome.with("last_known_output", last_known_output(self.channel(), None));
        Acted::new(outcome.not_contacted(), Contact::none(proof))
    }

    pub(super) fn channel(&self) -> Option<u8> {
        match self.request {
            Request::Status { channel } => channel,
            Request::Set { channel, .. }
            | Request::Output { channel, .. }
            | Request::Cycle { channel, .. } => Some(channel),
        }
    }

    pub(super) fn identity_unknown(&self, seen: &Seen) -> Acted {
        self.identity_refused(Outcome::refused(
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
        .with_remediation([
            "Report `model` and `firmware` and stop.",
            "Check that the supply on this port is the type the configuration names.",
        ])
        .with_do_not(["Do not change `type` to get the call through, and do not drive the supply another way."]))
    }

    pub(super) fn identity_mismatch(&self, seen: &Seen) -> Acted {
        self.identity_refused(Outcome::refused(
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
        .with_remediation([
            "Check which supply is cabled to this port and connect the configured unit.",
            "If the unit was replaced on purpose, the operator writes its idn_serial and checks the limits still fit.",
        ])
        .with_do_not(["Do not drive this unit through another entry or another way."]))
    }

    /// A refusal on the unit's identity: only the identity query reached it, so nothing changed.
    fn identity_refused(&self, outcome: Outcome) -> Acted {
        let outcome = outcome.with("last_known_output", last_known_output(self.channel(), None));
        Acted::new(
            outcome.not_started(false),
            Contact::none("only the identity query was sent"),
        )
    }

    /// A conversation that ended without an answer: before any write nothing changed; after one
    /// the unit's state is unknown, and the gate opens an incident.
    pub(super) fn failed(&self, err: &PsuError, seen: &Seen) -> Acted {
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
        Acted::new(outcome, contact)
    }
}
