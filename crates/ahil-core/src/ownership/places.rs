//! labgrid places: the lab-wide side of a claim. A device the configuration gives a place
//! (`labgrid.places`) is held through labgrid's coordinator before its device lock is taken: a
//! place someone else has acquired is `device_busy` naming that labgrid user (and the reservation),
//! before any contact; a free one is acquired as this gate's labgrid user and released when the
//! last hold of this process on it ends. Holds of this process are counted per place, so calls
//! inside a run that holds the place, or two of our calls on devices of one place, ask the
//! coordinator nothing. Decision 0018.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use ahil_config::{Config, Labgrid};
use ahil_labgrid::{Coordinator, Error, code};
use serde_json::json;

use crate::ErrorType;
use crate::catalogue::Gate;
use crate::envelope::Outcome;
use crate::ownership::runs::DeclaredDevice;
use crate::policy::DeviceUse;

/// This gate's coordinator and the places this process holds.
pub struct Places {
    coordinator: Coordinator,
    config: Labgrid,
    /// Each place this process holds and how many holds (calls, a run) share it.
    held: Mutex<BTreeMap<String, usize>>,
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
}

impl PlaceHold {
    /// The places this hold covers.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Ends a call's hold: a session start that succeeded keeps it until the session's stop (a
    /// repeated start finds the session's already kept and gives its own back); a session stop
    /// that succeeded gives the session's back with its own.
    pub fn end_call(mut self, gate: Gate, resources: &[String], ok: bool) {
        let places = Arc::clone(&self.places);
        let key = resources.join("\n");
        let mut sessions = places
            .sessions
            .lock()
            .expect("the session place lock is never held across a panic");
        if ok && gate.starts_session() {
            if let std::collections::btree_map::Entry::Vacant(slot) = sessions.entry(key) {
                slot.insert(std::mem::take(&mut self.names));
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
            run: Mutex::new(Vec::new()),
            sessions: Mutex::new(BTreeMap::new()),
        }))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, usize>> {
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
        self.run
            .lock()
            .expect("the run's place list lock is never held across a panic")
            .append(&mut hold.names);
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
        for name in &names {
            if let Some(count) = held.get_mut(name) {
                *count += 1;
                taken.push(name.clone());
                continue;
            }
            match self.coordinator.acquire(name) {
                Ok(()) => {
                    held.insert(name.clone(), 1);
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
        })
    }

    fn give_back(&self, held: &mut BTreeMap<String, usize>, names: &[String]) {
        for name in names {
            let Some(count) = held.get_mut(name) else {
                continue;
            };
            *count -= 1;
            if *count == 0 {
                held.remove(name);
                // A release that fails leaves the place acquired under our name; the next hold
                // of it by this gate is then refused as our own stale acquisition, never ignored.
                let _ = self.coordinator.release(name);
            }
        }
    }

    fn refusal(&self, tool: &str, place: &str, e: &Error) -> Outcome {
        let address = self.coordinator.address();
        match e {
            Error::Status {
                code: code::FAILED_PRECONDITION | code::PERMISSION_DENIED,
                ..
            } => self.busy(tool, place, e),
            Error::Status {
                code: code::INVALID_ARGUMENT,
                ..
            } => Outcome::refused(
                tool,
                ErrorType::LabgridPlaceNotFound,
                format!("The labgrid coordinator knows no place `{place}`; nothing was contacted."),
            )
            .with("labgrid_place", place)
            .with("labgrid_coordinator", address)
            .with("backend_error", e.to_string())
            .not_contacted(),
            _ => Outcome::refused(
                tool,
                ErrorType::LabgridUnavailable,
                format!(
                    "The labgrid coordinator did not answer, so place `{place}` could not be held; nothing was contacted."
                ),
            )
            .with("labgrid_place", place)
            .with("labgrid_coordinator", address)
            .with("backend_error", e.to_string())
            .not_contacted(),
        }
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
