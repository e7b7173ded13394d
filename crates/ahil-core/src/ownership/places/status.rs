//! The places in a status (`hardware_lease_status`, `lease-status`, `watch`): for each configured
//! place, its devices, whether this gate's labgrid user has it and for which holds, its labgrid
//! owner when someone else has it, and the reservations allocated to it. One `GetPlaces` and one
//! `GetReservations`, each bounded like any claim's; a coordinator that does not answer marks every
//! entry `labgrid_unavailable` and the status is otherwise the same.

use std::collections::BTreeMap;
use std::fmt::Write;

use ahil_labgrid::{Place, Reservation};
use serde_json::{Value, json};

use super::Places;
use crate::ownership::KernelLocks;

/// Who holds a place acquired under this gate's labgrid user.
const THIS_SERVER: &str = "this_server";
const LIVE_SERVER: &str = "live_server";
const DEAD_SERVER: &str = "dead_server";

impl Places {
    /// Every configured place as a status shows it, by place name.
    pub fn status(&self) -> Value {
        let configured = self.configured();
        // What this process holds, read before the coordinator is asked: the table is never locked
        // across a network answer by a status.
        let ours: BTreeMap<String, Vec<&'static str>> = {
            let held = self.lock();
            held.iter()
                .map(|(name, h)| (name.clone(), self.holds_of(name, h.count)))
                .collect()
        };
        let listed = self
            .coordinator
            .places()
            .and_then(|places| Ok((places, self.coordinator.reservations()?)));
        let locks = KernelLocks::read();
        let entries: Vec<Value> = configured
            .into_iter()
            .map(|(place, devices)| {
                let local = ours
                    .get(&place)
                    .map(|holds| (THIS_SERVER, holds.clone()))
                    .or_else(|| self.live_mark(&locks, &place));
                let mut entry = match &listed {
                    Ok((places, reservations)) => {
                        listed_entry(self, &place, places, reservations, local)
                    }
                    Err(e) => {
                        let mut entry = json!({"labgrid_unavailable": e.to_string()});
                        if let Some((holder, holds)) = local {
                            entry["holder"] = json!(holder);
                            entry["held_for"] = json!(holds);
                        }
                        entry["summary"] = json!(format!(
                            "{place}: the labgrid coordinator did not answer{}",
                            local_words(entry.get("held_for"))
                        ));
                        entry
                    }
                };
                entry["place"] = json!(place);
                entry["devices"] = json!(devices);
                entry
            })
            .collect();
        json!({
            "coordinator": self.coordinator.address(),
            "user": self.coordinator.user(),
            "places": entries,
        })
    }

    /// Each configured place with the devices (`section.entry`) that belong to it.
    fn configured(&self) -> BTreeMap<String, Vec<String>> {
        let sections = [
            ("debuggers", &self.config.places.debuggers),
            ("com_ports", &self.config.places.com_ports),
            ("can_buses", &self.config.places.can_buses),
            ("power_supplies", &self.config.places.power_supplies),
        ];
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (section, entries) in sections {
            for (entry, place) in entries {
                out.entry(place.clone())
                    .or_default()
                    .push(format!("{section}.{entry}"));
            }
        }
        out
    }

    /// The holds another live process of this bench wrote in `place`'s mark, if one holds it: read
    /// from the kernel's lock table, never by taking the mark (a status must not make a server's
    /// settling see a holder that is not there).
    fn live_mark(
        &self,
        locks: &KernelLocks,
        place: &str,
    ) -> Option<(&'static str, Vec<&'static str>)> {
        let path = self.marks.join(format!("{place}.lock"));
        if locks.holds(&path) != Some(true) {
            return None;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let written: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        let holds = ["call", "run", "session"]
            .into_iter()
            .filter(|h| {
                written["holds"]
                    .as_array()
                    .is_some_and(|a| a.iter().any(|v| v == h))
            })
            .collect();
        Some((LIVE_SERVER, holds))
    }
}

fn listed_entry(
    places: &Places,
    place: &str,
    listed: &[Place],
    reservations: &[Reservation],
    local: Option<(&'static str, Vec<&'static str>)>,
) -> Value {
    let Some(found) = listed.iter().find(|p| p.name == place) else {
        return json!({
            "labgrid_place_not_found": true,
            "summary": format!("{place}: the labgrid coordinator knows no such place"),
        });
    };
    let reserved: Vec<Value> = reservations
        .iter()
        .filter(|r| found.reservation.as_deref() == Some(r.token.as_str()))
        .map(|r| json!({"token": r.token, "owner": r.owner, "state": r.state_name()}))
        .collect();
    let owner = found.acquired.clone();
    let held_by_us = owner.as_deref() == Some(places.coordinator.user());
    let mut entry = json!({
        "labgrid_owner": owner,
        "held_by_us": held_by_us,
        "reservations": reserved,
    });
    let mut words = match &owner {
        None => format!("{place}: free"),
        Some(_) if held_by_us => {
            let (holder, holds) = local.unwrap_or((DEAD_SERVER, Vec::new()));
            entry["holder"] = json!(holder);
            entry["held_for"] = json!(holds);
            if holder == DEAD_SERVER {
                format!(
                    "{place}: acquired under our labgrid user by a server that is gone (the next call settles it)"
                )
            } else {
                format!("{place}: ours{}", local_words(entry.get("held_for")))
            }
        }
        Some(owner) => format!("{place}: acquired by {owner}"),
    };
    for r in &reserved {
        let _ = write!(
            words,
            "; reservation {} of {} ({})",
            r["token"].as_str().unwrap_or(""),
            r["owner"].as_str().unwrap_or(""),
            r["state"].as_str().unwrap_or("")
        );
    }
    entry["summary"] = json!(words);
    entry
}

/// `, held for a run and a call` from a `held_for` list; nothing when there is none.
fn local_words(held_for: Option<&Value>) -> String {
    let holds: Vec<&str> = held_for
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if holds.is_empty() {
        String::new()
    } else {
        format!(", held for: {}", holds.join(", "))
    }
}
