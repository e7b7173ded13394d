//! labgrid places: the lab-wide side of a claim. A device the configuration gives a place
//! (`labgrid.places`) is held through labgrid's coordinator before its device lock is taken: a
//! place someone else has acquired is `device_busy` naming that labgrid user (and the reservation),
//! before any contact; a free one is acquired as this gate's labgrid user and released when the
//! last hold of this process on it ends. Holds of this process are counted per place, so calls
//! inside a run that holds the place, or two of our calls on devices of one place, ask the
//! coordinator nothing. Decision 0017.

mod status;

use std::collections::BTreeMap;
use std::fs::File;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use ahil_config::{Config, Labgrid};
use ahil_labgrid::{Coordinator, Error, code};
use serde_json::json;

use crate::ErrorType;
use crate::catalogue::Gate;
use crate::envelope::Outcome;
use crate::ownership::coordination::Dirs;
use crate::ownership::runs::DeclaredDevice;
use crate::policy::DeviceUse;

/// This gate's coordinator and the places this process holds.
pub struct Places {
    coordinator: Coordinator,
    config: Labgrid,
    /// Each place this process holds: how many holds (calls, a run) share it, and its mark.
    held: Mutex<BTreeMap<String, Held>>,
    /// `<state_root>/coordination/labgrid`: one `<place>.lock` per place, `flock`ed by the server
    /// that holds the place, so the next server can tell a dead holder of our name from a live one.
    marks: PathBuf,
    /// The coordination directory, whose recovery ledger records a dead server's place settled.
    ledger: Dirs,
    /// The places the open run holds (counted in `held`) until it stops.
    run: Mutex<Vec<String>>,
    /// The places each open session holds (counted in `held`), by the session's resources.
    sessions: Mutex<BTreeMap<String, Vec<String>>>,
}

/// Holds places for as long as it lives; dropping it gives them back (the last hold of a place
/// releases it at the coordinator), so no early return can leave one acquired.
pub struct PlaceHold {
    places: Arc<Places>,
    names: Vec<String>,
    /// Places found acquired under our name by a server that is gone, released and taken again.
    stale: Vec<String>,
}

struct Held {
    count: usize,
    /// The place's mark, locked while this process holds the place (none if it could not be made).
    /// It says which holds keep the place (`{"holds": ["run"]}`), for a status in another process.
    mark: Option<File>,
}

/// Whether a server of this bench holds a place's mark.
enum Mark {
    /// Nobody did: ours now.
    Taken(File),
    /// A live server holds it.
    Held,
    /// It could not be opened; nothing can be said.
    Unknown,
}

impl PlaceHold {
    /// The places this hold covers.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Tells the call's result which places a dead server of ours had left acquired.
    pub fn note(&self, outcome: &mut Outcome) {
        if !self.stale.is_empty() {
            outcome.set("labgrid_stale_released", json!(self.stale));
        }
    }

    /// Ends a call's hold: a session start that succeeded keeps it until the session's stop (a
    /// repeated start finds the session's already kept and gives its own back); a session stop
    /// that succeeded gives the session's back with its own.
    pub fn end_call(mut self, gate: Gate, resources: &[String], outcome: &mut Outcome) {
        self.note(outcome);
        let ok = outcome.ok;
        let places = Arc::clone(&self.places);
        let key = resources.join("\n");
        let mut sessions = places
            .sessions
            .lock()
            .expect("the session place lock is never held across a panic");
        if ok && gate.starts_session() {
            if let std::collections::btree_map::Entry::Vacant(slot) = sessions.entry(key) {
                let names = slot.insert(std::mem::take(&mut self.names)).clone();
                drop(sessions);
                places.write_marks(&places.lock(), &names);
            }
            return;
        }
        let ended = (ok && gate.stops_session())
            .then(|| sessions.remove(&key))
            .flatten();
        drop(sessions);
        drop(self);
        if let Some(names) = ended {
            let mut table = places.lock();
            places.give_back(&mut table, &names);
            places.write_marks(&table, &names);
        }
    }
}

impl Drop for Places {
    /// A gate dropped with places still held (the run it was never told to stop) releases them;
    /// only a process that dies keeps them acquired.
    fn drop(&mut self) {
        let held = std::mem::take(&mut *self.lock());
        for name in held.keys() {
            let _ = self.coordinator.release(name);
        }
    }
}

impl Drop for PlaceHold {
    fn drop(&mut self) {
        let mut held = self.places.lock();
        self.places.give_back(&mut held, &self.names);
    }
}

impl Places {
    /// The places of a configuration with a `labgrid` section; `None` without one. No I/O: the
    /// coordinator is first contacted by the first call that touches a device with a place.
    pub fn for_config(config: &Config) -> Option<Arc<Self>> {
        let lab = config.labgrid.clone()?;
        let user = lab.user.clone().unwrap_or_else(ahil_labgrid::default_user);
        Some(Arc::new(Self {
            coordinator: Coordinator::new(lab.coordinator.clone(), user),
            config: lab,
            held: Mutex::new(BTreeMap::new()),
            marks: config.state_root.join("coordination").join("labgrid"),
            ledger: Dirs::under(&config.state_root),
            run: Mutex::new(Vec::new()),
            sessions: Mutex::new(BTreeMap::new()),
        }))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Held>> {
        self.held
            .lock()
            .expect("the place table lock is never held across a panic")
    }

    /// The places of the devices `uses` touches, sorted, each once.
    pub fn of_uses(&self, uses: &[DeviceUse<'_>]) -> Vec<String> {
        let mut names: Vec<String> = uses
            .iter()
            .filter_map(|u| u.device)
            .filter_map(|d| {
                let entry = d.entry();
                let (section, name) = entry.split_once('.')?;
                self.config.place_of(section, name).map(str::to_owned)
            })
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// The places of the devices a run declares (`kind` as `bench_run_start` names it), sorted,
    /// each once.
    pub fn of_declared(&self, devices: &[DeclaredDevice]) -> Vec<String> {
        let mut names: Vec<String> = devices
            .iter()
            .filter_map(|d| {
                let section = match d.kind.as_str() {
                    "debugger" => "debuggers",
                    "uart" => "com_ports",
                    "can" => "can_buses",
                    "power_supply" => "power_supplies",
                    _ => return None,
                };
                self.config.place_of(section, &d.id).map(str::to_owned)
            })
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// Keeps `hold` for the open run until [`Places::end_run`].
    pub fn keep_for_run(&self, mut hold: PlaceHold) {
        let names = hold.names.clone();
        self.run
            .lock()
            .expect("the run's place list lock is never held across a panic")
            .append(&mut hold.names);
        self.write_marks(&self.lock(), &names);
    }

    /// Gives back what the run held: a place no call of ours still holds is released.
    pub fn end_run(&self) {
        let names = std::mem::take(
            &mut *self
                .run
                .lock()
                .expect("the run's place list lock is never held across a panic"),
        );
        let mut held = self.lock();
        self.give_back(&mut held, &names);
        self.write_marks(&held, &names);
    }

    /// The places this process holds now.
    pub fn held(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }

    /// A call's hold on the places of the devices `uses` touches, when the gate has places.
    pub fn hold_for(
        places: Option<&Arc<Self>>,
        tool: &str,
        uses: &[DeviceUse<'_>],
    ) -> Result<Option<PlaceHold>, Box<Outcome>> {
        places
            .map(|places| places.hold(tool, places.of_uses(uses)))
            .transpose()
    }

    /// Holds every place in `names`, all or none: a place this process already holds is counted
    /// again; any other is acquired at the coordinator.
    pub fn hold(
        self: &Arc<Self>,
        tool: &str,
        names: Vec<String>,
    ) -> Result<PlaceHold, Box<Outcome>> {
        // The table stays locked across the coordinator's answers so two of our own calls cannot
        // both see a place free and the second be refused by our own acquisition.
        let mut held = self.lock();
        let mut taken = Vec::new();
        let mut stale = Vec::new();
        for name in &names {
            if let Some(place) = held.get_mut(name) {
                place.count += 1;
                taken.push(name.clone());
                continue;
            }
            let acquired = match self.coordinator.acquire(name) {
                Err(Error::Status {
                    code: code::FAILED_PRECONDITION,
                    ..
                }) if self.acquired_by_us(name) => self.settle_stale(name, &mut stale),
                other => other.map(|()| self.mark(name)),
            };
            match acquired {
                Ok(mark) => {
                    let mark = match mark {
                        Mark::Taken(file) => Some(file),
                        Mark::Held | Mark::Unknown => None,
                    };
                    held.insert(name.clone(), Held { count: 1, mark });
                    self.write_marks(&held, std::slice::from_ref(name));
                    taken.push(name.clone());
                }
                Err(e) => {
                    self.give_back(&mut held, &taken);
                    return Err(Box::new(self.refusal(tool, name, &e)));
                }
            }
        }
        Ok(PlaceHold {
            places: Arc::clone(self),
            names,
            stale,
        })
    }

    fn acquired_by_us(&self, place: &str) -> bool {
        self.coordinator
            .place(place)
            .ok()
            .flatten()
            .and_then(|p| p.acquired)
            .is_some_and(|owner| owner == self.coordinator.user())
    }

    /// `place` is acquired under our name but not by this process. If no live server of this bench
    /// holds its mark, the server that acquired it died holding it (labgrid keeps an acquisition
    /// when its client disconnects): it is released and acquired again for this hold. Otherwise it
    /// stays refused as busy.
    fn settle_stale(&self, place: &str, stale: &mut Vec<String>) -> Result<Mark, Error> {
        let busy = || Error::Status {
            method: "AcquirePlace",
            code: code::FAILED_PRECONDITION,
            message: format!("Place {place} is already acquired"),
        };
        let Mark::Taken(file) = self.mark(place) else {
            return Err(busy());
        };
        // On the ledger before the place moves, as a dead owner's lease is: a release nobody
        // recorded would leave the lab's history with a gap. Unrecorded, it stays refused.
        let event = json!({
            "event": "recovery",
            "recovery": "labgrid_stale_released",
            "labgrid_place": place,
            "labgrid_user": self.coordinator.user(),
            "done": "released at the coordinator and acquired again for this server",
            "reason": "a server of this bench died holding the place (its mark was free)",
            "actor": "server",
            "via": "labgrid",
            "time": ahil_config::time::now_millis(),
        });
        if self.ledger.append_ledger(&event).is_err() {
            return Err(busy());
        }
        self.coordinator.release(place)?;
        self.coordinator.acquire(place)?;
        stale.push(place.to_owned());
        Ok(Mark::Taken(file))
    }

    fn mark(&self, place: &str) -> Mark {
        if crate::fsio::create_dir_all_private(&self.marks, 0o700).is_err() {
            return Mark::Unknown;
        }
        let Ok(file) = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.marks.join(format!("{place}.lock")))
        else {
            return Mark::Unknown;
        };
        match file.try_lock() {
            Ok(()) => Mark::Taken(file),
            Err(std::fs::TryLockError::WouldBlock) => Mark::Held,
            Err(std::fs::TryLockError::Error(_)) => Mark::Unknown,
        }
    }

    /// Which holds of this process keep `name` (`call`, `run`, `session`), from its count and the
    /// run's and sessions' lists: what the count holds beyond those is calls.
    fn holds_of(&self, name: &str, count: usize) -> Vec<&'static str> {
        let run = self
            .run
            .lock()
            .expect("the run's place list lock is never held across a panic")
            .iter()
            .filter(|n| *n == name)
            .count();
        let sessions = self
            .sessions
            .lock()
            .expect("the session place lock is never held across a panic")
            .values()
            .flatten()
            .filter(|n| *n == name)
            .count();
        let mut holds = Vec::new();
        if count > run + sessions {
            holds.push("call");
        }
        if run > 0 {
            holds.push("run");
        }
        if sessions > 0 {
            holds.push("session");
        }
        holds
    }

    /// Writes into each held place's mark which holds keep it, so `lease-status` and `watch` in
    /// another process can say it. Only when a run or session takes or gives back a place, or one
    /// is acquired: a call on a place already held writes nothing. A view, not evidence: not synced.
    fn write_marks(&self, held: &BTreeMap<String, Held>, names: &[String]) {
        use std::os::unix::fs::FileExt;
        for name in names {
            let Some(Held {
                count,
                mark: Some(file),
            }) = held.get(name)
            else {
                continue;
            };
            let mut text = json!({"holds": self.holds_of(name, *count)}).to_string();
            text.push('\n');
            let _ = file
                .set_len(0)
                .and_then(|()| file.write_all_at(text.as_bytes(), 0));
        }
    }

    fn give_back(&self, held: &mut BTreeMap<String, Held>, names: &[String]) {
        for name in names {
            let Some(place) = held.get_mut(name) else {
                continue;
            };
            place.count -= 1;
            if place.count == 0 {
                // The mark is given up only after the release, so no other server of this bench
                // takes a place still acquired for us as a dead server's. A release that fails
                // leaves it acquired under our name with the mark free: the next hold settles it.
                let mark = held.remove(name);
                let _ = self.coordinator.release(name);
                drop(mark);
            }
        }
    }

    fn refusal(&self, tool: &str, place: &str, e: &Error) -> Outcome {
        let address = self.coordinator.address();
        let (error_type, summary) = match e {
            Error::Status {
                code: code::FAILED_PRECONDITION | code::PERMISSION_DENIED,
                ..
            } => return self.busy(tool, place, e),
            Error::Status {
                code: code::INVALID_ARGUMENT,
                ..
            } => (
                ErrorType::LabgridPlaceNotFound,
                format!("The labgrid coordinator knows no place `{place}`; nothing was contacted."),
            ),
            _ => (
                ErrorType::LabgridUnavailable,
                format!(
                    "The labgrid coordinator did not answer, so place `{place}` could not be held; nothing was contacted."
                ),
            ),
        };
        Outcome::refused(tool, error_type, summary)
            .with("labgrid_place", place)
            .with("labgrid_coordinator", address)
            .with("backend_error", e.to_string())
            .not_contacted()
    }

    /// `device_busy` naming whoever has the place: its labgrid owner, and the reservation it is
    /// allocated to, as the coordinator lists them now.
    fn busy(&self, tool: &str, place: &str, e: &Error) -> Outcome {
        let listed = self.coordinator.place(place).ok().flatten();
        let owner = listed.as_ref().and_then(|p| p.acquired.clone());
        let reservation = listed.as_ref().and_then(|p| p.reservation.clone());
        let reservation_owner = reservation.as_ref().and_then(|token| {
            self.coordinator
                .reservations()
                .ok()?
                .into_iter()
                .find(|r| &r.token == token)
                .map(|r| r.owner)
        });
        let ours = owner.as_deref() == Some(self.coordinator.user());
        let summary = match (&owner, &reservation_owner) {
            _ if ours => format!(
                "labgrid place `{place}` is acquired under this gate's own labgrid user, but not by this server (a server that died holding it, or another gate under the same name); nothing was contacted."
            ),
            (Some(owner), _) => {
                format!("labgrid place `{place}` is acquired by {owner}; nothing was contacted.")
            }
            (None, Some(reserved_for)) => format!(
                "labgrid place `{place}` is reserved for {reserved_for}; nothing was contacted."
            ),
            (None, None) => format!(
                "labgrid place `{place}` could not be acquired ({e}); nothing was contacted."
            ),
        };
        let mut outcome = Outcome::refused(tool, ErrorType::DeviceBusy, summary)
            .with("labgrid_place", place)
            .with("labgrid_user", self.coordinator.user())
            .with_causes([if ours {
                "an earlier server of this gate was killed while it held the place"
            } else {
                "a person, a CI job or another agent holds the board through labgrid"
            }])
            .with_remediation([
                "Wait until the holder releases the place (`labgrid-client who` shows it), then call the tool again.",
                "Ask the holder to run `labgrid-client -p <place> release` when done.",
            ])
            .with_do_not(["Do not release another user's place to take the board."])
            .not_contacted();
        if let Some(owner) = owner {
            outcome.set("labgrid_owner", owner);
        }
        if let Some(token) = reservation {
            outcome.set(
                "labgrid_reservation",
                json!({"token": token, "owner": reservation_owner}),
            );
        }
        outcome
    }
}
