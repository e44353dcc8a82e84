//! The latest ends of tool calls by id: a capture registered twice writes every record twice,
//! and an end that repeats one of its id's latest ends is such a copy, not another call.

use std::borrow::Borrow;
use std::collections::VecDeque;
use std::hash::Hash;

/// How many of the latest ends of one id are remembered to tell a repeated end record.
pub(super) const ENDS_PER_ID: usize = 16;

/// How many ended calls are remembered to tell a repeated end record.
pub(super) const ENDED_TOOLS_WINDOW: usize = 4_096;

/// What the latest [`ENDED_TOOLS_WINDOW`] ends held, by key (up to [`ENDS_PER_ID`] each).
#[derive(Debug, Clone)]
pub(super) struct LatestEnds<K, V> {
    /// The keys of the latest ends, oldest first, with the number of each end.
    order: VecDeque<(K, u64)>,
    /// By key: the number of its latest end, and what its latest ends held.
    by_key: super::IdMap<K, (u64, Vec<V>)>,
    /// How many ends were noted.
    count: u64,
}

impl<K, V> Default for LatestEnds<K, V> {
    fn default() -> Self {
        LatestEnds { order: VecDeque::new(), by_key: super::IdMap::default(), count: 0 }
    }
}

impl<K: Eq + Hash + Clone, V> LatestEnds<K, V> {
    /// Notes an end of `key` that held `end`; the oldest end leaves the window (and its key
    /// with it, unless the key ended again since).
    pub(super) fn note(&mut self, key: K, end: V) {
        if self.order.len() == ENDED_TOOLS_WINDOW
            && let Some((oldest, number)) = self.order.pop_front()
            && self.by_key.get(&oldest).is_some_and(|(latest, _)| *latest == number)
        {
            self.by_key.remove(&oldest);
        }
        self.count += 1;
        self.order.push_back((key.clone(), self.count));
        let (latest, ends) = self.by_key.entry(key).or_default();
        *latest = self.count;
        // A repeated record comes soon after its copy: the latest ends of the key are kept.
        if ends.len() == ENDS_PER_ID {
            ends.remove(0);
        }
        ends.push(end);
    }

    /// What the latest ends of `key` held (empty when it has none in the window).
    pub(super) fn of<Q: Eq + Hash + ?Sized>(&self, key: &Q) -> &[V]
    where
        K: Borrow<Q>,
    {
        self.by_key.get(key).map_or(&[], |(_, ends)| ends)
    }

    /// Whether `key` has an end in the window.
    pub(super) fn contains<Q: Eq + Hash + ?Sized>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
    {
        self.by_key.contains_key(key)
    }
}

/// Whether an earlier end of an id, which held `end` and whose start held `start` (when it was
/// read), is no copy of a new end that holds the same: its input was rewritten (a PreToolUse
/// hook, or a v2 `post` with other arguments than its `pre`) and a call that started as it
/// did is in flight (`in_flight`): that is the same call made again under a reused id,
/// rewritten alike, and the new end is its own.
pub(super) fn started_again<T: PartialEq>(start: Option<&T>, end: &T, in_flight: impl FnOnce(&T) -> bool) -> bool {
    start.is_some_and(|start| start != end && in_flight(start))
}

/// Span ids made from a record's line (`ID#L<line>`), for a call that needs one of its own.
/// The records of a list share its line, so the second and later of one line get `.N`
/// (`ID#L<line>.1`, ...).
#[derive(Debug, Clone, Default)]
pub(super) struct LineIds {
    /// The line of the latest id made, and how many were made for it before that one.
    latest: (u64, u32),
}

impl LineIds {
    pub(super) fn make(&mut self, id: &str, line: u64) -> String {
        if self.latest.0 == line {
            self.latest.1 += 1;
            format!("{id}#L{line}.{}", self.latest.1)
        } else {
            self.latest = (line, 0);
            format!("{id}#L{line}")
        }
    }
}
