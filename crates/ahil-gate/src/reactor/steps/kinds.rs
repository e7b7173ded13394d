//! The steps that drive one device kind: UART, CAN, and the debug session.

#[allow(clippy::wildcard_imports)]
use super::*;
use crate::ErrorType;
use crate::catalogue::ToolId;
use ahil_config::plan::SymbolComparator;

/// Whether a session start step opened its session itself: one the agent (or an earlier step)
/// already had answers `already_active: true` and is used as it is, so the run's end, which closes
/// only what the run opened, leaves it to its owner.
fn opened_here(started: &Done) -> bool {
    started.ok && started.result.get("already_active") == Some(&json!(false))
}

impl Exec<'_> {
    /// A UART step.
    pub(super) async fn uart_step(&mut self, step: &Step) -> Done {
        match step {
            Step::UartOpen {
                route,
                clear_buffer,
            } => {
                let done = self
                    .simple(
                        "com_session_start",
                        json!({"port_id": route.name, "clear_buffer": clear_buffer}),
                    )
                    .await;
                if opened_here(&done) && !self.opened.uarts.contains(&route.name) {
                    self.opened.uarts.push(route.name.clone());
                }
                done
            }
            Step::UartWrite { route, payload } => {
                let args = match payload {
                    UartPayload::Text(text) => json!({"port_id": route.name, "text": text}),
                    UartPayload::Hex(hex) => json!({"port_id": route.name, "hex": hex}),
                };
                self.simple("com_write", args).await
            }
            Step::UartRead {
                route,
                comparator: None,
                timeout_s,
            } => {
                let mut args = json!({"port_id": route.name});
                if let Some(t) = timeout_s {
                    args["wait_timeout_s"] = json!(t.min(60.0));
                }
                self.simple("com_read", args).await
            }
            Step::UartRead {
                route,
                comparator: Some(comparator),
                timeout_s,
            } => {
                self.read_until(
                    Source::Port(&route.name),
                    Until::Comparator(comparator),
                    timeout_s.unwrap_or(1.0),
                )
                .await
            }
            Step::UartExpect {
                route,
                matcher,
                timeout_s,
            } => {
                self.read_until(
                    Source::Port(&route.name),
                    Until::Expect(matcher),
                    *timeout_s,
                )
                .await
            }
            Step::UartClose { route } => {
                let done = self
                    .simple("com_session_stop", json!({"port_id": route.name}))
                    .await;
                if done.ok {
                    self.opened.uarts.retain(|p| p != &route.name);
                }
                done
            }
            _ => unreachable!("run() routes only these kinds here"),
        }
    }

    /// `rtt_expect`: the run's first opens the debugger's RTT session (what the firmware wrote
    /// since its boot is kept), and the run stops it at its end; an RTT session this agent opened
    /// before the run is used as it is and left open.
    pub(super) async fn rtt_step(&mut self, step: &Step) -> Done {
        let Step::RttExpect {
            channel,
            matcher,
            timeout_s,
            ..
        } = step
        else {
            unreachable!("run() routes only rtt_expect here")
        };
        let started = self.call("rtt_session_start", json!({})).await;
        if !overall_success(&started) {
            return Done::from_outcome(&started);
        }
        let debugger = started
            .detail("debugger")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if opened_here(&Done::from_outcome(&started)) {
            self.opened.rtt = Some(debugger.clone());
        }
        let source = Source::Rtt {
            debugger: &debugger,
            channel,
        };
        self.read_until(source, Until::Expect(matcher), *timeout_s)
            .await
    }

    /// A CAN step.
    pub(super) async fn can_step(&mut self, step: &Step) -> Done {
        match step {
            Step::CanOpen {
                route,
                participant,
                clear_rx_queue,
            } => {
                let args = bus_args(
                    &route.name,
                    participant.as_ref(),
                    json!({"clear_rx_queue": clear_rx_queue}),
                );
                let done = self.simple("can_session_start", args).await;
                let key = (route.name.clone(), participant.clone());
                if opened_here(&done) && !self.opened.cans.contains(&key) {
                    self.opened.cans.push(key);
                }
                done
            }
            Step::CanSend {
                route,
                participant,
                frame_id,
                extended,
                rtr,
                data_hex,
            } => {
                let args = bus_args(
                    &route.name,
                    participant.as_ref(),
                    json!({"frame_id": frame_id, "extended": extended, "rtr": rtr, "data_hex": data_hex}),
                );
                self.simple("can_send", args).await
            }
            Step::CanRead {
                route,
                participant,
                comparator: None,
                max_frames,
                wait_timeout_s,
                ..
            } => {
                let mut args = bus_args(&route.name, participant.as_ref(), json!({}));
                if let Some(n) = max_frames {
                    args["max_frames"] = json!(n);
                }
                if let Some(t) = wait_timeout_s {
                    // As a UART read step: the tool takes 60 s at most.
                    args["wait_timeout_s"] = json!(t.min(60.0));
                }
                self.simple("can_read", args).await
            }
            Step::CanRead {
                route,
                participant,
                comparator: Some(comparator),
                timeout_s,
                ..
            } => {
                self.can_until(
                    &route.name,
                    participant.as_ref(),
                    comparator,
                    timeout_s.unwrap_or(1.0),
                )
                .await
            }
            Step::CanClose { route, participant } => {
                let done = self
                    .simple(
                        "can_session_stop",
                        bus_args(&route.name, participant.as_ref(), json!({})),
                    )
                    .await;
                if done.ok {
                    self.opened
                        .cans
                        .retain(|(b, p)| !(b == &route.name && p == participant));
                }
                done
            }
            _ => unreachable!("run() routes only these kinds here"),
        }
    }

    /// A debug-session step.
    pub(super) async fn debug_step(&mut self, step: &Step) -> Done {
        match step {
            Step::DebugStart {
                route,
                image_path,
                mode,
                timeout_s,
            } => {
                let mode = match mode {
                    DebugStartMode::Attach => "attach",
                    DebugStartMode::ResetHalt => "reset_halt",
                    DebugStartMode::Load => "load",
                };
                let mut args = json!({"image_path": image_path, "mode": mode});
                if let Some(t) = timeout_s {
                    args["timeout_s"] = json!(t);
                }
                let done = self.simple("debug_start_session", args).await;
                if done.ok {
                    // Preflight allowed an omitted route only with exactly one debugger.
                    // The description in force now, as the step itself was planned on.
                    let only = || {
                        self.bench
                            .reactor_view()
                            .and_then(|view| {
                                view.loaded()
                                    .config
                                    .auto_bound_debugger()
                                    .map(|(name, _)| name.to_owned())
                            })
                            .unwrap_or_default()
                    };
                    self.opened.debug = Some(route.as_ref().map_or_else(only, |r| r.name.clone()));
                }
                done
            }
            Step::RunUntilBreakpoint {
                location,
                timeout_s,
                ..
            } => self.until_breakpoint(location, *timeout_s).await,
            Step::DumpMemory {
                symbol,
                output_path,
                ..
            } => {
                if let Some(refused) = self.unflashed(ToolId::DebugDumpSymbolIhex, symbol) {
                    return refused;
                }
                self.simple(
                    "debug_dump_symbol_ihex",
                    json!({"symbol": symbol, "output_path": output_path}),
                )
                .await
            }
            Step::ReadSymbol {
                symbol,
                size_bytes,
                comparator,
                ..
            } => {
                if let Some(refused) = self.unflashed(ToolId::DebugSymbolValue, symbol) {
                    return refused;
                }
                let outcome = self
                    .call("debug_symbol_value", json!({"symbol": symbol}))
                    .await;
                let mut done = Done::from_outcome(&outcome);
                if !done.ok {
                    return done;
                }
                if let Some(size) = size_bytes
                    && outcome.detail("size_bytes").and_then(Value::as_u64) != Some(*size)
                {
                    let mut doc = as_map(done.result);
                    doc.insert("expected_size_bytes".into(), json!(size));
                    doc.insert(
                        "summary".into(),
                        json!(format!("The symbol {symbol} is not {size} bytes wide.")),
                    );
                    return Done::failed("symbol_size_mismatch", doc);
                }
                if let Some(comparator) = comparator {
                    let mut doc = as_map(done.result.clone());
                    // A width with no integer reading is no verdict on the firmware.
                    if !matches!(
                        outcome.detail("size_bytes").and_then(Value::as_u64),
                        Some(1 | 2 | 4 | 8)
                    ) {
                        doc.insert("comparator".into(), comparator_doc(comparator));
                        doc.insert("integer_widths".into(), json!([1, 2, 4, 8]));
                        doc.insert(
                            "summary".into(),
                            json!(format!("{symbol} is not 1, 2, 4 or 8 bytes wide, so the comparator could not be judged.")),
                        );
                        return Done::failed(ErrorType::SymbolWidthNotNumeric.as_str(), doc);
                    }
                    match matching::symbol(comparator, &done.result) {
                        Ok(judged) => {
                            doc.insert("comparator".into(), Value::Object(judged));
                            done.result = Value::Object(doc);
                        }
                        Err(judged) => {
                            doc.insert("comparator".into(), Value::Object(judged));
                            doc.insert(
                                "summary".into(),
                                json!(format!(
                                    "The value of {symbol} did not meet the comparator."
                                )),
                            );
                            return Done::failed("comparator_unmet", doc);
                        }
                    }
                }
                done
            }
            Step::DebugStop { timeout_s, .. } => {
                let mut args = json!({});
                if let Some(t) = timeout_s {
                    args["timeout_s"] = json!(t);
                }
                let done = self.simple("debug_stop_session", args).await;
                if done.ok {
                    self.opened.debug = None;
                }
                done
            }
            _ => unreachable!("run() routes only these kinds here"),
        }
    }
}

impl Exec<'_> {
    /// A symbol step outside a debug session (ST-Link, probe-rs) reads from the ELF a flash step of
    /// this run wrote, or fails before any contact: as in the reference, a board flashed before the
    /// plan (or by an earlier run) is not taken to run a known image.
    fn unflashed(&self, tool: ToolId, symbol: &str) -> Option<Done> {
        if self.opened.debug.is_some() || self.flashed_elf {
            return None;
        }
        let outcome = Outcome::refused(
            tool.name(),
            ErrorType::SymbolSourceNotAvailable,
            "No ELF was flashed by this run, so no symbol table describes what is on the target.",
        )
        .with("symbol", symbol)
        .with_causes([
            "the plan has no flash step of the ELF before this step",
            "the plan's last flash step wrote a HEX or BIN image, which carries no symbols",
        ])
        .with_next_step("Add a flash step of the ELF before this step, or a debug_start step.")
        .not_contacted();
        Some(Done::from_outcome(&outcome))
    }
}

/// The plan's comparator as a result names it (numbers as decimal strings, as the judged ones are).
fn comparator_doc(comparator: &SymbolComparator) -> Value {
    let (mut doc, signed) = match comparator {
        SymbolComparator::Equals {
            value,
            mask,
            signed,
        } => {
            let mut doc = json!({"equals": value.to_string()});
            if let Some(mask) = mask {
                doc["mask"] = json!(mask.to_string());
            }
            (doc, signed)
        }
        SymbolComparator::Range { min, max, signed } => (
            json!({"range": {"min": min.to_string(), "max": max.to_string()}}),
            signed,
        ),
    };
    if *signed {
        doc["signed"] = json!(true);
    }
    doc
}
