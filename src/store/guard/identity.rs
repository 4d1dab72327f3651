//! The store's identity: adopted on first use, checked on every call against what this
//! process knew before the read, declared lost (with word left in the store) only on a
//! second read, and replaced by a repair; a wiped store's floor, and this machine's
//! memory of what it saw.

use super::*;

impl Shared {
    /// Checks the store's identity (adopting it on first use) and reads `extra` along
    /// in the same call; an error if the store lost data or this process saw it do so.
    ///
    /// The reply is judged against what this process knew *before* the read was sent:
    /// threads of one process taking their first lease on a new store at once must not
    /// take a reply that left before another thread wrote the identity for a store that
    /// lost it. Nothing is declared lost on one read: the identity is read again first.
    pub(crate) fn check(&self, extra: &[&str]) -> Result<Vec<Option<String>>, StoreError> {
        let mut names = vec![STORE_ID, LOST, REPLACES];
        names.extend_from_slice(extra);
        let before = self.knowledge();
        let mut values = self.records.get(&names)?;
        let rest = values.split_off(3);
        let (id, lost, replaces) = (values[0].take(), values[1].take(), values[2].take());
        if let Some(lost) = lost.filter(|l| !l.is_empty()) {
            let why = format!(
                "the store carries word that it lost data ({lost}); run `uidgen store repair` \
                 against it after checking it, then start again"
            );
            self.learn(before.generation, |state| {
                state.lost = Some(why.clone());
                state.lost_by_word = true;
            });
            return Err(self.lost_error(&why));
        }
        if before.lost_by_word {
            // The word is gone (repaired), unless a newer reply brought it meanwhile.
            self.learn(before.generation, |state| {
                state.lost_by_word = false;
                state.lost = None;
            });
        }
        let lost_here = before.lost.filter(|_| !before.lost_by_word);
        let replaces = replaces.unwrap_or_default();
        match (before.identity, id) {
            (Some(seen), Some(id)) if seen == id => {
                if let Some(why) = lost_here {
                    return Err(self.lost_error(&why));
                }
            }
            (Some(seen), Some(id)) if replaced(&replaces, &seen) => {
                // Repaired since: everything was raised past what was handed out.
                self.adopt(&id, &replaces)?;
                let mut was_lost = false;
                self.learn_always(|state| was_lost = state.lost.take().is_some());
                if was_lost {
                    tracing::warn!(store = %self.key, "uidgen: the store was repaired; taking from it again");
                }
            }
            (Some(_), _) if lost_here.is_some() => {
                return Err(self.lost_error(&lost_here.unwrap_or_default()));
            }
            (Some(seen), _) => {
                // Asked again: only what a second read still shows is taken as a loss.
                let mut again = self.records.get(&[STORE_ID, REPLACES])?;
                let (id, replaces) = (again[0].take(), again[1].take().unwrap_or_default());
                match id {
                    Some(id) if id == seen => {}
                    Some(id) if replaced(&replaces, &seen) => self.adopt(&id, &replaces)?,
                    None => {
                        return Err(
                            self.declare_lost(format!("its identity record {seen:?} vanished"))
                        )
                    }
                    Some(id) => {
                        return Err(self
                            .declare_lost(format!("its identity changed from {seen:?} to {id:?}")))
                    }
                }
            }
            (None, Some(id)) => {
                self.say_if_forgotten();
                self.adopt(&id, &replaces)?;
            }
            (None, None) => {
                if let Some(remembered) = self.remembered_identity()? {
                    // Another process of this machine may have made the identity since the
                    // read above (it writes the store first, then the memory): the store
                    // is asked again before it is called lost.
                    let now = self.records.get(&[STORE_ID])?.pop().flatten();
                    if now.as_deref() == Some(remembered.as_str()) {
                        self.adopt(&remembered, &replaces)?;
                        return Ok(rest);
                    }
                    self.load_memory_floors()?;
                    self.learn_always(|state| state.identity = Some(remembered.clone()));
                    return Err(self.declare_lost(format!(
                        "this machine used it before (identity {remembered:?}, remembered in {}), \
                         but it has no identity now: the store lost data (emptied or replaced: \
                         a restart without persistence, FLUSHALL, a new database); run `uidgen \
                         store repair` against it to raise it past what this machine handed out",
                        self.memory
                            .as_ref()
                            .map_or(String::new(), |m| m.path().display().to_string())
                    )));
                }
                if self.wiped() {
                    // Written before the identity, so that every process that sees the
                    // identity sees the floor in the same read.
                    let floor = now_ms().saturating_add(WIPED_STORE_AHEAD.as_millis() as u64);
                    raise_record(&*self.records, MARK_FLOOR, floor)?;
                    tracing::warn!(
                        store = %self.key,
                        "uidgen: this embedded store has no identity and this machine keeps no \
                         memory of it, but memory of an earlier store is kept beside it: it was \
                         wiped, and what was handed out from it is unknown; its leases start \
                         {} s ahead of the clock, past any time an earlier run may have borrowed",
                        WIPED_STORE_AHEAD.as_secs()
                    );
                }
                self.records.insert(STORE_ID, &new_identity())?;
                let id = self
                    .records
                    .get(&[STORE_ID])?
                    .pop()
                    .flatten()
                    .ok_or_else(|| {
                        self.lost_error("its identity record vanished right after it was written")
                    })?;
                self.adopt(&id, "")?;
                // Read again: what was read along came before the records written here (a
                // wiped store's mark floor among them).
                if !extra.is_empty() {
                    return self.records.get(extra);
                }
            }
        }
        Ok(rest)
    }

    /// What this process knows of the store now.
    fn knowledge(&self) -> Knowledge {
        let state = lock(&self.state);
        Knowledge {
            generation: state.generation,
            identity: state.identity.clone(),
            lost: state.lost.clone(),
            lost_by_word: state.lost_by_word,
        }
    }

    /// Applies what a reply showed, unless this process learned something since the read
    /// was sent (`generation`): then the reply is older than what the process knows.
    fn learn(&self, generation: u64, change: impl FnOnce(&mut State)) {
        let mut state = lock(&self.state);
        if state.generation == generation {
            change(&mut state);
            state.generation += 1;
        }
    }

    /// Applies a change whatever was learned meanwhile.
    fn learn_always(&self, change: impl FnOnce(&mut State)) {
        let mut state = lock(&self.state);
        change(&mut state);
        state.generation += 1;
    }

    /// An embedded store about to be given its first identity whose file was there
    /// before (emptied: `: > workers.sqlite3`), on a machine that kept memory of stores
    /// before but remembers no identity of this one (its state file removed or emptied):
    /// the store and its memory were wiped together. Runs on it moments ago may have used
    /// ticks up to [`WIPED_STORE_AHEAD`] past the clock, on worker IDs now free again, so
    /// its leases start past that. A new file (a new store, or one deleted rather than
    /// emptied) and a new machine (no memory folder yet) start at the clock: nothing tells
    /// them from a first use.
    fn wiped(&self) -> bool {
        self.kind() == StoreKind::Sqlite
            && self.file_was_there
            && self.memory.as_ref().is_some_and(Memory::folder_was_there)
    }

    /// Says once, at INFO, that an existing store has no state file on this machine (a
    /// new one, or one removed or emptied): nothing repeats (the store's own marks and counters hold),
    /// but an operator who removed it should know it is started again.
    fn say_if_forgotten(&self) {
        let Some(memory) = &self.memory else { return };
        if self.said_forgotten.load(Ordering::Relaxed) {
            return;
        }
        // Removed or emptied: no identity remembered (a damaged file is the adopt's error).
        if memory.read().is_ok_and(|r| r.identity.is_none())
            && !self.said_forgotten.swap(true, Ordering::Relaxed)
        {
            tracing::info!(
                store = %self.key,
                memory = %memory.path().display(),
                "uidgen keeps no memory of this store on this machine yet (a new, removed or \
                 emptied state file): starting one from what the store holds"
            );
        }
    }

    fn remembered_identity(&self) -> Result<Option<String>, StoreError> {
        match &self.memory {
            Some(memory) => Ok(memory.read()?.identity),
            None => Ok(None),
        }
    }

    /// Takes `id` as the store's identity, if local memory agrees, and loads the floors
    /// local memory holds.
    fn adopt(&self, id: &str, replaces: &str) -> Result<(), StoreError> {
        if let Some(memory) = &self.memory {
            let remembered = memory.read()?;
            if let Some(old) = &remembered.identity {
                if old != id && !replaced(replaces, old) {
                    self.load_memory_floors()?;
                    self.learn_always(|state| state.identity = Some(old.clone()));
                    return Err(self.declare_lost(format!(
                        "this machine last saw it with identity {old:?} (remembered in {}), and \
                         it now has {id:?}: it was replaced or lost its data (a restore of \
                         another copy, a restart without persistence, a new database); run \
                         `uidgen store repair` against it to raise it past what this machine \
                         handed out",
                        memory.path().display()
                    )));
                }
            }
            memory.update(|r| r.identity = Some(id.to_owned()))?;
            self.load_memory_floors()?;
        }
        self.learn_always(|state| state.identity = Some(id.to_owned()));
        Ok(())
    }

    /// Takes this machine's floors of the store into the process's.
    fn load_memory_floors(&self) -> Result<(), StoreError> {
        let Some(memory) = &self.memory else {
            return Ok(());
        };
        let remembered = memory.read()?;
        let mut state = lock(&self.state);
        for (key, end) in remembered.tags {
            let floor = state.floors.entry(key).or_default();
            *floor = (*floor).max(end);
        }
        for (key, mark) in remembered.marks {
            let floor = state.marks.entry(key).or_default();
            *floor = (*floor).max(mark);
        }
        Ok(())
    }

    /// Stops taking from the store, reports it, leaves word in the store (with every
    /// floor this process knows) and stops the leases on it; the error to return.
    pub(crate) fn declare_lost(&self, what: String) -> StoreError {
        let why = format!(
            "{what}: the store lost data (a restart without persistence, FLUSHALL, a restore, \
             a promoted replica); this process takes nothing more from it. After checking it, \
             run `uidgen store repair` against it, then start again"
        );
        {
            let mut state = lock(&self.state);
            if state.lost.is_some() {
                return self.lost_error(&why);
            }
            state.lost = Some(why.clone());
            state.generation += 1;
        }
        report(format!("{}: {what}", self.key));
        // Leases stop first; each notes how far its ticks really went, so the word left
        // below carries the marks of the ticks used, not the ones recorded ahead.
        let hooks: Vec<LossHook> = lock(&self.on_loss).drain(..).collect();
        for hook in hooks {
            hook(&why);
        }
        let (floors, marks) = {
            let state = lock(&self.state);
            (state.floors.clone(), state.marks.clone())
        };
        let word = format!(
            "{} {what}; seen by {}",
            now_ms(),
            crate::process::holder_identity()
        );
        let seen = lock(&self.state).identity.clone();
        let left = (|| {
            self.records.put(LOST, &word)?;
            if let Some(random) = seen.as_deref().and_then(|s| s.split_whitespace().next()) {
                let listed = self.records.get(&[LOST_IDENTITIES])?.pop().flatten();
                let mut listed: Vec<String> = listed
                    .unwrap_or_default()
                    .split_whitespace()
                    .map(str::to_owned)
                    .collect();
                if !listed.iter().any(|l| l == random) {
                    listed.push(random.to_owned());
                    self.records.put(LOST_IDENTITIES, &listed.join(" "))?;
                }
            }
            for ((scope, tag), end) in &floors {
                raise_record(&*self.records, &floor_name(scope, tag), *end)?;
            }
            for ((scope, worker), mark) in &marks {
                raise_record(&*self.records, &mark_name(scope, *worker), *mark)?;
            }
            Ok::<(), StoreError>(())
        })();
        if let Err(e) = left {
            tracing::warn!(error = %e, store = %self.key, "uidgen could not leave word of the data loss in the store");
        }
        self.lost_error(&why)
    }

    /// After a repair: `id` is the identity, and the store is taken from again.
    pub(crate) fn adopt_repaired(&self, id: &str) -> Result<(), StoreError> {
        if let Some(memory) = &self.memory {
            memory.update(|r| r.identity = Some(id.to_owned()))?;
        }
        self.learn_always(|state| {
            state.identity = Some(id.to_owned());
            state.lost = None;
        });
        Ok(())
    }

    /// A network store whose identity is brand new may have just lost its data while
    /// processes that used the old one still run: waits until they have seen it and left
    /// word (the caller then checks again); `true` if it waited.
    pub(crate) fn young_wait(&self, kind: StoreKind) -> bool {
        if kind == StoreKind::Sqlite {
            return false;
        }
        match self.identity_age().filter(|age| *age < YOUNG_STORE) {
            Some(age) => {
                std::thread::sleep(YOUNG_STORE - age);
                true
            }
            None => false,
        }
    }

    /// The identity this process adopted, if it has one.
    pub(crate) fn identity(&self) -> Option<String> {
        lock(&self.state).identity.clone()
    }

    /// How long ago the identity this process adopted was made, if it has one.
    pub(crate) fn identity_age(&self) -> Option<Duration> {
        let identity = self.identity()?;
        let made: u64 = identity.split_whitespace().nth(1)?.parse().ok()?;
        Some(Duration::from_millis(now_ms().saturating_sub(made)))
    }
}

/// What a process knew of a store at one moment (see [`Shared::check`]).
struct Knowledge {
    generation: u64,
    identity: Option<String>,
    lost: Option<String>,
    lost_by_word: bool,
}

/// Whether `identity` is one of those a repair replaced (listed by their random part).
fn replaced(replaces: &str, identity: &str) -> bool {
    let random = identity.split_whitespace().next().unwrap_or_default();
    !random.is_empty() && replaces.split_whitespace().any(|r| r == random)
}
