//! The sessions a gate holds across calls (COM ports, CAN buses), by the device id they were
//! opened for.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// A session knows the id it is registered under.
pub trait Keyed {
    fn key(&self) -> &str;
}

/// The open sessions of one kind.
pub struct Table<S> {
    map: Mutex<BTreeMap<String, Arc<S>>>,
}

impl<S> Default for Table<S> {
    fn default() -> Self {
        Self {
            map: Mutex::new(BTreeMap::new()),
        }
    }
}

impl<S: Keyed> Table<S> {
    fn table(&self) -> MutexGuard<'_, BTreeMap<String, Arc<S>>> {
        // Inserts and removes are single statements, so a poisoned table is still consistent.
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The session on `id`, if one is registered (alive or failed).
    pub fn get(&self, id: &str) -> Option<Arc<S>> {
        self.table().get(id).cloned()
    }

    pub fn remove(&self, id: &str) -> Option<Arc<S>> {
        self.table().remove(id)
    }

    /// The ids with a registered session (for shutdown).
    pub fn ids(&self) -> Vec<String> {
        self.table().keys().cloned().collect()
    }
}

impl<S: Keyed> Table<S> {
    /// Registers a session its start just opened. When another took the id meanwhile, `close`
    /// closes this one before the start answers, so the device is free when the refusal arrives.
    pub fn register_opened(&self, session: S, close: impl FnOnce(&S)) -> Option<Arc<S>> {
        use crate::session_lifecycle::Registry as _;
        let session = Arc::new(session);
        match self.register(Arc::clone(&session)) {
            Ok(()) => Some(session),
            Err(refused) => {
                close(&refused);
                None
            }
        }
    }
}

impl<S: Keyed> crate::session_lifecycle::Registry for Table<S> {
    type Entry = Arc<S>;

    /// A second session under a registered id is refused, never put over the first (which would
    /// drop it, and its device, from under its users).
    fn register(&self, session: Arc<S>) -> Result<(), Arc<S>> {
        let mut table = self.table();
        if table.contains_key(session.key()) {
            return Err(session);
        }
        table.insert(session.key().to_owned(), session);
        Ok(())
    }

    fn unregister(&self, key: &str) {
        self.remove(key);
    }
}
