//! Holds that end by themselves (`holds:` in the configuration, issue #29). A run opened by
//! `bench_run_start`, or a COM, CAN, debug or RTT session, that stays open past the operator's
//! maximum is closed by the gate through [`Bench::call`], the same stop the agent or the shutdown
//! would run: safe-state rules, lease and place release, audit and report all as for any stop. The
//! stop's report says why (`closed_because`), and the agent's next result names what was closed
//! (`holds_expired`), once. A timer in the server does it, not the next call: a forgotten hold
//! must free the board for others whether or not the agent calls again.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use ahil_config::Holds;
use ahil_config::time::iso_millis;
use serde_json::{Value, json};
use tokio::sync::Notify;

use super::{Bench, Provisioned, State, Tools};
use crate::ErrorType;
use crate::catalogue::ToolId;
use crate::envelope::Outcome;

/// How soon a gate's stop that failed is tried again, at most: its hold's own maximum when that is
/// shorter. A failed stop (a debug stop that could not reconfirm the halt) leaves the hold open, and
/// waiting a whole maximum again would keep a forgotten board held for twice as long.
const RETRY_AFTER: Duration = Duration::from_mins(1);
/// How many stops the gate makes of one hold before it stops trying: a stop that keeps failing
/// needs a person, and one every minute forever would fill the evidence with the same failure.
const STOP_ATTEMPTS: u32 = 3;

tokio::task_local! {
    /// Set for a call the gate makes on its own account: a test plan's step (`None`), which must
    /// leave the agent's notices for the agent's own result, or an expired hold's stop (the reason
    /// its report carries).
    static INNER: Option<Value>;
}

/// Runs `future` (a frontend's steps) as the gate's own calls: they take no notice meant for the
/// agent.
pub(super) async fn inner<F: Future>(future: F) -> F::Output {
    INNER.scope(None, future).await
}

/// Whether the call running now is the gate's stop of an expired hold.
pub(super) fn closing() -> bool {
    INNER.try_with(Option::is_some).unwrap_or(false)
}

/// The holds this gate watches, and what the agent has not been told yet.
pub(super) struct Expiry {
    holds: Holds,
    table: Mutex<Table>,
    /// Woken when a hold is tracked, so the timer sleeps until the new earliest deadline.
    changed: Notify,
}

#[derive(Default)]
struct Table {
    /// Each open hold by its closing call (`<tool> <arguments>`).
    open: BTreeMap<String, Open>,
    /// Closes the agent has not been told of.
    notices: Vec<Value>,
    /// Holds the gate tried to stop [`STOP_ATTEMPTS`] times, all failed: no longer watched while
    /// they stay open (the agent's stop or the shutdown still closes them).
    given_up: Vec<String>,
}

#[derive(Clone)]
struct Open {
    tool: ToolId,
    args: Value,
    /// `run` or `session`: which maximum applies.
    hold: &'static str,
    max: Duration,
    since: SystemTime,
    deadline: Instant,
    /// The gate's stops of this hold that failed so far.
    failed_stops: u32,
}

/// What follows a gate's stop of a hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Retry {
    /// It closed the hold.
    NotNeeded,
    /// It failed and kept the hold: the next try is then.
    At(SystemTime),
    /// It failed for the last time: the hold is no longer watched.
    GaveUp,
}

/// The key of a hold: its closing call, as it will be made.
fn key(tool: ToolId, args: &Value) -> String {
    format!("{} {args}", tool.name())
}

impl Expiry {
    /// The watch over `holds`; `None` when no maximum is set, so a bench without one pays nothing.
    pub(super) fn for_holds(holds: Holds) -> Option<Self> {
        holds.any().then(|| Self {
            holds,
            table: Mutex::new(Table::default()),
            changed: Notify::new(),
        })
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        // Every change is a single insert, remove or push, so a poisoned table is still consistent.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Brings the watched holds in line with what is open now: `sessions` are the closing calls of
    /// the open sessions, `run_started` whether this call opened the run (a test plan's own run is
    /// bounded by its plan, not by `max_run_s`), `run_open` whether any run is open. Holds that
    /// appeared start their clock now; holds that ended are forgotten. The table stays locked
    /// while it is compared, so two calls' updates never interleave. Returns the maximum of the
    /// holds this update started, for the start's result.
    fn sync(
        &self,
        sessions: Vec<(ToolId, Value)>,
        run_started: bool,
        run_open: bool,
    ) -> Option<Duration> {
        let now = (SystemTime::now(), Instant::now());
        let mut table = self.table();
        let run_key = key(ToolId::BenchRunStop, &json!({}));
        let mut keep: Vec<String> = Vec::new();
        let mut started = None;
        let mut track = |table: &mut Table, tool, args: Value, hold, max: Option<Duration>| {
            let key = key(tool, &args);
            keep.push(key.clone());
            let Some(max) = max else { return };
            if table.open.contains_key(&key) || table.given_up.contains(&key) {
                return;
            }
            let deadline = now.1 + max;
            table.open.insert(
                key,
                Open {
                    tool,
                    args,
                    hold,
                    max,
                    since: now.0,
                    deadline,
                    failed_stops: 0,
                },
            );
            started = Some(max);
        };
        for (tool, args) in sessions {
            track(&mut table, tool, args, "session", self.holds.max_session());
        }
        if run_started {
            track(
                &mut table,
                ToolId::BenchRunStop,
                json!({}),
                "run",
                self.holds.max_run(),
            );
        } else if run_open {
            keep.push(run_key);
        }
        table.open.retain(|key, _| keep.contains(key));
        table.given_up.retain(|key| keep.contains(key));
        drop(table);
        if started.is_some() {
            self.changed.notify_one();
        }
        started
    }

    /// The earliest deadline of a watched hold.
    fn next_deadline(&self) -> Option<Instant> {
        self.table().open.values().map(|o| o.deadline).min()
    }

    /// Takes out the holds whose deadline is past.
    fn take_due(&self, now: Instant) -> Vec<Open> {
        let mut table = self.table();
        let due: Vec<String> = table
            .open
            .iter()
            .filter(|(_, o)| o.deadline <= now)
            .map(|(k, _)| k.clone())
            .collect();
        due.iter().filter_map(|k| table.open.remove(k)).collect()
    }

    /// After the gate's stop of `open` failed and left it open: tried again within
    /// [`RETRY_AFTER`] (not a whole maximum, which the stop's own update would have set), until
    /// [`STOP_ATTEMPTS`] stops have failed; then no longer watched while it stays open.
    fn retry(&self, open: &Open) -> Retry {
        let key = key(open.tool, &open.args);
        let mut table = self.table();
        let failed_stops = open.failed_stops + 1;
        if failed_stops >= STOP_ATTEMPTS {
            table.open.remove(&key);
            table.given_up.push(key);
            return Retry::GaveUp;
        }
        let after = RETRY_AFTER.min(open.max);
        let again = Open {
            failed_stops,
            deadline: Instant::now() + after,
            ..open.clone()
        };
        table.open.insert(key, again);
        drop(table);
        self.changed.notify_one();
        Retry::At(SystemTime::now() + after)
    }

    /// Keeps what the gate's stop of `open` did for the agent's next result; `still_open` when
    /// the hold is open after it (a stop that failed and kept it).
    fn closed(&self, open: &Open, outcome: &Outcome, still_open: bool) {
        let retry = if still_open {
            self.retry(open)
        } else {
            Retry::NotNeeded
        };
        let limit = format!("holds.max_{}_s", open.hold);
        let summary = if outcome.ok {
            format!(
                "The {} stayed open past {limit} ({} s), so the gate closed it with {}.",
                open.hold,
                open.max.as_secs(),
                open.tool.name()
            )
        } else {
            format!(
                "The {} stayed open past {limit} ({} s); the gate's {} failed, so it may still be held.",
                open.hold,
                open.max.as_secs(),
                open.tool.name()
            )
        };
        self.table().notices.push(json!({
            "hold": open.hold,
            "reason": ErrorType::HoldExpired.as_str(),
            "summary": summary,
            "closed_with": {"tool": open.tool.name(), "arguments": open.args},
            "closed": outcome.ok,
            "error_type": outcome.error_type,
            "max_hold_s": open.max.as_secs(),
            "held_since": iso_millis(open.since),
            "closed_at": ahil_config::time::now_millis(),
            "report_path": outcome.report_path,
        }));
        if retry != Retry::NotNeeded {
            let mut table = self.table();
            if let Some(notice) = table.notices.last_mut() {
                notice["stop_attempt"] = json!(open.failed_stops + 1);
                match retry {
                    Retry::At(at) => notice["retry_at"] = json!(iso_millis(at)),
                    Retry::GaveUp | Retry::NotNeeded => notice["gave_up"] = json!(true),
                }
            }
        }
    }

    /// Gives the agent's result every notice not yet told, once.
    fn tell(&self, outcome: &mut Outcome) {
        let notices = std::mem::take(&mut self.table().notices);
        if !notices.is_empty() {
            outcome.set("holds_expired", Value::Array(notices));
        }
    }

    /// The stop's reason, for its report.
    fn reason(open: &Open) -> Value {
        json!({
            "reason": ErrorType::HoldExpired.as_str(),
            "hold": open.hold,
            "max_hold_s": open.max.as_secs(),
            "held_since": iso_millis(open.since),
        })
    }
}

impl<T: Tools> Provisioned<T> {
    /// After the act: a stop the timer runs says why in its result and report, and the watched
    /// holds follow what this call opened or closed; a start that began a watched hold says when it
    /// will end.
    pub(super) fn after_act(&self, id: ToolId, mut outcome: Outcome) -> Outcome {
        if let Ok(Some(reason)) = INNER.try_with(Option::clone) {
            outcome.set("closed_because", reason);
        }
        let Some(expiry) = &self.expiry else {
            return outcome;
        };
        let run_started = outcome.ok && id == ToolId::BenchRunStart;
        let run_open = self.ownership.runs.current().is_some();
        let started = expiry.sync(self.held.closing_calls(), run_started, run_open);
        let starts = run_started || id.gate().starts_session() || id == ToolId::RttSessionStart;
        if let Some(max) = started.filter(|_| starts && outcome.ok) {
            let ends = SystemTime::now() + max;
            outcome.set("max_hold_s", max.as_secs());
            outcome.set("hold_expires_at", iso_millis(ends));
        }
        outcome
    }
}

impl<T: Tools> Bench<T> {
    fn expiry(&self) -> Option<&Expiry> {
        match &self.state {
            State::Provisioned(bench) => bench.expiry.as_ref(),
            State::Unprovisioned { .. } => None,
        }
    }

    /// Whether `open` is still held: the run, or a session whose closing call is still listed.
    fn still_open(&self, open: &Open) -> bool {
        let State::Provisioned(bench) = &self.state else {
            return false;
        };
        if open.tool == ToolId::BenchRunStop {
            return bench.ownership.runs.current().is_some();
        }
        bench
            .held
            .closing_calls()
            .iter()
            .any(|(tool, args)| *tool == open.tool && *args == open.args)
    }

    /// Gives an agent's result the expired holds it has not been told of; the gate's own calls
    /// (a plan's steps, an expiry's stop) take none.
    pub(super) fn tell_expired(&self, outcome: &mut Outcome) {
        if let Some(expiry) = self.expiry()
            && INNER.try_with(|_| ()).is_err()
        {
            expiry.tell(outcome);
        }
    }

    /// Closes each hold whose maximum ran out, through [`Bench::call`] like any stop, until `stop`
    /// resolves. `stop` is heard only between closes, so a shutdown never cuts one short; a gate
    /// without a maximum just waits for `stop`.
    pub async fn expire_holds(&self, stop: impl Future<Output = ()>) {
        tokio::pin!(stop);
        let Some(expiry) = self.expiry() else {
            stop.await;
            return;
        };
        loop {
            let next = expiry.next_deadline();
            let sleep = async {
                match next {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = &mut stop => return,
                () = expiry.changed.notified() => continue,
                () = sleep => {}
            }
            for open in expiry.take_due(Instant::now()) {
                let reason = Some(Expiry::reason(&open));
                let call = self.call(open.tool.name(), open.args.clone());
                let outcome = INNER.scope(reason, call).await;
                expiry.closed(&open, &outcome, self.still_open(&open));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watching_a_session() -> (Expiry, (ToolId, Value)) {
        let holds = Holds {
            max_run_s: None,
            max_session_s: Some(3600),
        };
        let expiry = Expiry::for_holds(holds).expect("a maximum is set");
        let session = (ToolId::ComSessionStop, json!({"port_id": "uart0"}));
        expiry.sync(vec![session.clone()], false, false);
        (expiry, session)
    }

    /// The timer's turn: the hold is due, its stop fails (and, as through the pipeline, the stop's
    /// own update finds the session still open), and the gate hears of it.
    fn a_failed_gate_stop(expiry: &Expiry, session: &(ToolId, Value)) {
        let past_the_maximum = Instant::now() + Duration::from_secs(3601);
        let due = expiry.take_due(past_the_maximum);
        assert_eq!(due.len(), 1, "the session is due");
        expiry.sync(vec![session.clone()], false, false);
        let failed = Outcome::refused("com_session_stop", ErrorType::InternalError, "failed");
        expiry.closed(&due[0], &failed, true);
    }

    #[test]
    fn a_gate_stop_that_failed_is_tried_again_within_a_minute_not_after_a_whole_maximum() {
        let (expiry, session) = watching_a_session();
        a_failed_gate_stop(&expiry, &session);
        let next = expiry.next_deadline().expect("still watched");
        assert!(
            next <= Instant::now() + RETRY_AFTER,
            "the next try is within RETRY_AFTER, not a whole max_session_s"
        );
        let notice = expiry.table().notices[0].clone();
        assert_eq!(notice["stop_attempt"], json!(1), "{notice}");
        assert!(notice["retry_at"].is_string(), "{notice}");
    }

    #[test]
    fn a_gate_stop_that_keeps_failing_is_given_up_after_three_tries_until_the_hold_closes() {
        let (expiry, session) = watching_a_session();
        for _ in 0..STOP_ATTEMPTS {
            a_failed_gate_stop(&expiry, &session);
        }
        assert_eq!(expiry.next_deadline(), None, "no fourth try");
        expiry.sync(vec![session.clone()], false, false);
        assert_eq!(
            expiry.next_deadline(),
            None,
            "a later call's update does not watch it again while it stays open"
        );
        let notices = expiry.table().notices.clone();
        assert_eq!(notices.len(), 3);
        assert_eq!(notices[2]["gave_up"], json!(true), "{}", notices[2]);

        expiry.sync(Vec::new(), false, false);
        expiry.sync(vec![session], false, false);
        assert!(
            expiry.next_deadline().is_some(),
            "a new session under the same name is watched again"
        );
    }
}
