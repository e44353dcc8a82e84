//! Run summaries: many events stepped apart from the engine (on the thread that read them),
//! then merged into the engine in one go, with exactly the engine's result.
//!
//! A [`Summarizer`] takes a run of consecutive events with what [`MatchPlan::prepare`] made of
//! them and keeps, for every rule without a scope, what the run changes: its first matches,
//! counts, first violation and (for `immediately_before`) how it starts and ends. Merging with
//! [`SequenceEngine::apply_summary`] gives the state the engine would have reached by feeding
//! the events one by one, because every relation's state is a monoid over events:
//!
//! - `before`: the first `a` and `b` of the engine, else of the run;
//! - `only_after`: a violation is the first `b` before any `a`, so the run's first such `b`
//!   counts only when the engine has seen no `a` (and no violation) yet;
//! - `immediately_before`: the run's first event is judged by whether the engine's last
//!   event was an `a`, every later one inside the run;
//! - `never`, `count`: first match and counts add up.
//!
//! This holds when every event of the run *counts* as a call on its own: each is a call end
//! (post-only, as in the seed's JSONL) and the engine has no open calls to pair it with; the
//! summarizer and [`SequenceEngine::apply_summary`] check both and refuse otherwise, and the
//! caller feeds the events one by one instead. Rules with a `within` scope follow span ids
//! the engine keeps, so they stay with the engine: [`Summarizer::push`] says which events
//! they need, and the caller feeds those with [`SequenceEngine::feed_scoped`].

use super::{
    ArgsRef, Call, EventRef, ExcerptKey, Location, MatchBits, Matches, Prepared, Relation, RuleIds, RuleMasks,
    RuleState, SequenceEngine, by_hash, span_hash, span_refs,
};

/// A call's arguments as the excerpt shows them: their JSON text, at most 160 characters.
fn excerpt_args(args: ArgsRef<'_>) -> String {
    let text = match args {
        ArgsRef::None => String::new(),
        ArgsRef::Value(value) => value.to_string(),
        ArgsRef::Json(text) => text.to_owned(),
    };
    text.chars().take(160).collect()
}

/// How the excerpt marks a call that ended with an error.
const FAILED_MARK: &str = " -> failed";

/// What a run changes for one rule (positions are indexes of events in the run).
#[derive(Debug, Clone, PartialEq)]
enum Partial {
    Before {
        first_a: Option<u32>,
        first_b: Option<u32>,
    },
    OnlyAfter {
        first_a: Option<u32>,
        first_b: Option<u32>,
        unpreceded_b: Option<u32>,
    },
    ImmediatelyBefore {
        count_b: u64,
        first_b: Option<u32>,
        first_is_b: bool,
        violation: Option<u32>,
        last_is_a: bool,
    },
    Never {
        first: Option<u32>,
        count: u64,
    },
    Count {
        count: u64,
    },
    /// A rule with a scope: the engine steps it per event.
    Scoped,
}

/// What one run of events changes in the engine; see the module documentation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    events: u32,
    /// Every event of the run was a call end, and the run is short enough for `u32` positions.
    mergeable: bool,
    partials: Vec<Partial>,
    /// The post-only calls of the run with a span that no rule with a scope concerns, or
    /// only as a root without a parent (see [`SequenceEngine::note_summary_link`]): their positions in the run (none listed while
    /// the `k`-th link is the `k`-th event), and apart from them their
    /// `(span, parent)` hashes, which the engine copies in bulk.
    link_index: Vec<u32>,
    link_pairs: Vec<(u64, u64)>,
    /// The links that are scope roots without a parent, by their place among the links,
    /// with the scoped rules whose root they match (bit `i`: rule `i`): such a call changes a
    /// scope only by opening it, which [`SequenceEngine::feed_summary_calls`] does without
    /// feeding it (see [`SequenceEngine::open_root`]).
    link_roots: Vec<(u32, u64)>,
    /// Whether a tool call of the run had a parent (noted only for engines with a scope).
    parented: bool,
    /// Whether the run held an agent invocation (see [`SequenceEngine::agents_seen`]).
    agents: bool,
    /// The run's calls whose arguments argument conditions cannot read, by tool name.
    unread_arguments: Vec<UnreadCalls>,
}

/// Calls of one tool in a run whose arguments argument conditions cannot read (see
/// `unreadable_arguments`), for [`SequenceEngine::apply_summary`] to count as feeding them
/// would.
#[derive(Debug, Clone, PartialEq)]
struct UnreadCalls {
    name: Box<str>,
    /// Text or a lone value, rather than none.
    as_text: bool,
    calls: u32,
    /// The position in the run of the first that has a line.
    first: Option<u32>,
}

impl Summary {
    /// Notes the `index`-th event of the run, a call whose arguments argument conditions
    /// cannot read. Such calls are few, and of few tools: a list searched in order.
    #[cold]
    fn note_unread_arguments(&mut self, event: &EventRef<'_>, index: u32, as_text: bool) {
        let name = event.name.unwrap_or("");
        let here = event.line.map(|_| index);
        match self.unread_arguments.iter_mut().find(|seen| *seen.name == *name && seen.as_text == as_text) {
            Some(seen) => {
                seen.calls = seen.calls.saturating_add(1);
                seen.first = seen.first.or(here);
            }
            None => self.unread_arguments.push(UnreadCalls { name: name.into(), as_text, calls: 1, first: here }),
        }
    }

    /// The events summarized.
    pub fn events(&self) -> u32 {
        self.events
    }

    /// The run's calls whose parents the engine records, in order.
    pub fn links(&self) -> impl ExactSizeIterator<Item = SummaryLink> + '_ {
        let mut roots = self.link_roots.iter().peekable();
        self.link_pairs.iter().enumerate().map(move |(at, &(span, parent))| {
            let roots = roots.next_if(|&&(root, _)| root as usize == at).map_or(0, |&(_, rules)| rules);
            SummaryLink { index: self.link_position(at), span, parent, roots }
        })
    }

    /// The position in the run of its `k`-th link.
    fn link_position(&self, k: usize) -> u32 {
        if self.link_index.is_empty() { k as u32 } else { self.link_index[k] }
    }

    /// How many of the links from the `from`-th on are events before `before`.
    fn links_before(&self, from: usize, before: usize) -> usize {
        if self.link_index.is_empty() {
            before.min(self.link_pairs.len()).saturating_sub(from)
        } else {
            // A linear scan: every link is passed once over the whole run (a binary search
            // per wanted event read the same entries again, out of cache, in the profile).
            self.link_index[from..].iter().take_while(|&&index| (index as usize) < before).count()
        }
    }

    /// Adds a link at event `index` of the run (the list of positions is made when the
    /// first link comes after an event that is none).
    fn push_link(&mut self, index: u32, pair: (u64, u64)) {
        let listed = !self.link_index.is_empty();
        if listed || index as usize != self.link_pairs.len() {
            if !listed {
                self.link_index.extend(0..self.link_pairs.len() as u32);
            }
            self.link_index.push(index);
        }
        self.link_pairs.push(pair);
    }
}

/// A post-only call with a span, of a summarized run, that no rule with a scope otherwise
/// needs: the engine records its parent or that it has none (calls under it are inside a
/// scope its parent is in), and calls under it that came first and wait for it learn where
/// it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SummaryLink {
    /// Its position in the run (among the events pushed).
    pub index: u32,
    span: u64,
    /// 0 when it has no parent.
    parent: u64,
    /// The rules whose scope it opens (bit `i`: rule `i`; it has no parent then).
    pub(super) roots: u64,
}

/// Summarizes runs of prepared events for one engine's rules (one per thread).
#[derive(Debug, Clone)]
pub struct Summarizer {
    kinds: Vec<Partial>,
    ids: Vec<RuleIds>,
    masks: RuleMasks,
    /// Some rule has argument conditions: calls whose arguments they cannot read are noted.
    reads_arguments: bool,
    /// The run so far.
    run: Summary,
}

impl SequenceEngine {
    /// A summarizer for this engine's rules, or `None` when runs cannot be summarized (more
    /// than 64 rules).
    pub fn summarizer(&self) -> Option<Summarizer> {
        if self.rules.len() > 64 {
            return None;
        }
        let kinds: Vec<Partial> = self
            .rules
            .iter()
            .map(|rule| match (&rule.within, &rule.relation) {
                (Some(_), _) => Partial::Scoped,
                (None, Relation::Before(..)) => Partial::Before { first_a: None, first_b: None },
                (None, Relation::OnlyAfter(..)) => {
                    Partial::OnlyAfter { first_a: None, first_b: None, unpreceded_b: None }
                }
                (None, Relation::ImmediatelyBefore(..)) => Partial::ImmediatelyBefore {
                    count_b: 0,
                    first_b: None,
                    first_is_b: false,
                    violation: None,
                    last_is_a: false,
                },
                (None, Relation::Never(..)) => Partial::Never { first: None, count: 0 },
                (None, Relation::Count(..)) => Partial::Count { count: 0 },
            })
            .collect();
        let run = Summary { events: 0, mergeable: true, partials: kinds.clone(), ..Summary::default() };
        Some(Summarizer {
            kinds,
            ids: self.ids.clone(),
            masks: self.masks.clone(),
            reads_arguments: self.reads_arguments,
            run,
        })
    }

    /// Merges a run's summary into the engine, as if its events had been fed one by one;
    /// `locate(k)` gives the line and `seq` of the run's `k`-th event. False (and nothing
    /// changed) when the summary cannot stand for its events here: then feed them one by one.
    /// The run's events that [`Summarizer::push`] marked for the scoped rules still go to
    /// [`SequenceEngine::feed_scoped`], and the excerpt, if kept, to
    /// [`SequenceEngine::note_call`].
    pub fn apply_summary(&mut self, summary: &Summary, locate: impl Fn(u32) -> (Option<u64>, u64)) -> bool {
        if !summary.mergeable
            || !self.open_calls.is_empty()
            || !self.open_idless.is_empty()
            || summary.partials.len() != self.rules.len()
        {
            return false;
        }
        let at = |index: Option<u32>| {
            index.map(|index| {
                let (line, seq) = locate(index);
                Location { line, seq, span: None }
            })
        };
        self.events += u64::from(summary.events);
        self.calls += u64::from(summary.events);
        self.summarized += u64::from(summary.events);
        self.parented_calls |= summary.parented;
        self.agents_seen |= summary.agents;
        for unread in &summary.unread_arguments {
            let line = unread.first.and_then(|k| locate(k).0);
            self.tally_unread_arguments(unread.as_text, &unread.name, u64::from(unread.calls), line);
        }
        for (state, partial) in self.states.iter_mut().zip(&summary.partials) {
            match (state, partial) {
                (RuleState::Before { first_a, first_b, a_first }, Partial::Before { first_a: a, first_b: b }) => {
                    if first_b.is_none()
                        && let Some(b) = b
                    {
                        *a_first = first_a.is_some() || a.is_some_and(|a| a < *b);
                    }
                    *first_a = first_a.or_else(|| at(*a));
                    *first_b = first_b.or_else(|| at(*b));
                }
                (
                    RuleState::OnlyAfter { seen_a, first_b, violation },
                    Partial::OnlyAfter { first_a: a, first_b: b, unpreceded_b },
                ) => {
                    if seen_a.is_none() && violation.is_none() {
                        *violation = at(*unpreceded_b);
                    }
                    *first_b = first_b.or_else(|| at(*b));
                    *seen_a = seen_a.or_else(|| at(*a));
                }
                (
                    RuleState::ImmediatelyBefore { previous_is_a, previous, count_b, violation, first_b },
                    Partial::ImmediatelyBefore { count_b: n, first_b: b, first_is_b, violation: inner, last_is_a },
                ) => {
                    if summary.events == 0 {
                        continue;
                    }
                    // Every event of a run is a tool call's end: the one before the run's
                    // `k`-th is its `k - 1`-th. A run holds no agent starts, so no agent can
                    // be one step with its last call: its span is not kept.
                    let call = |index: Option<u32>| at(index).map(|at| Call { at, agent_start: false, span: 0 });
                    if violation.is_none() {
                        *violation = if *first_is_b && !*previous_is_a {
                            at(Some(0)).map(|here| (here, *previous))
                        } else {
                            at(*inner).map(|here| (here, call(inner.and_then(|k| k.checked_sub(1)))))
                        };
                    }
                    *previous = call(summary.events.checked_sub(1));
                    *count_b += n;
                    *first_b = first_b.or_else(|| at(*b));
                    *previous_is_a = *last_is_a;
                }
                (RuleState::Never { first, count }, Partial::Never { first: f, count: n }) => {
                    *first = first.or_else(|| at(*f));
                    *count += n;
                }
                (RuleState::Count { count }, Partial::Count { count: n }) => *count += n,
                _ => {}
            }
        }
        true
    }

    /// Feeds one event of an applied summary to the rules with a scope (the others had it
    /// in the summary).
    pub fn feed_scoped(&mut self, event: &EventRef<'_>, prepared: &Prepared) {
        self.order += 1;
        let (span, parent) = span_refs(event, Some((prepared.span_hash, prepared.parent_hash)));
        let location = Location::of(event);
        let matches = Matches::Bits(&prepared.bits);
        // Every event here is a post-only call end.
        if let Some(span) = span {
            self.links.note(span.hash, parent.map_or(0, |parent| parent.hash));
        }
        let mut todo = self.masks.scoped;
        while todo != 0 {
            let idx = todo.trailing_zeros() as usize;
            todo &= todo - 1;
            self.step(idx, true, event.post_only_parent, true, false, span, parent, location, &matches);
        }
    }

    /// How many of the last calls the engine keeps as an excerpt (0: none).
    pub fn excerpt_capacity(&self) -> usize {
        self.excerpt_capacity
    }

    /// Adds a call to the excerpt (for events counted through a summary).
    pub fn note_call(&mut self, event: &EventRef<'_>) {
        let span = event.span_id.map(|id| ExcerptKey::Span(span_hash(event.trace_id, id)));
        self.push_excerpt(Location::of(event), event, span);
    }

    /// Adds a call to the excerpt; `span` (see [`ExcerptKey`]) lets its end mark it failed.
    pub(super) fn push_excerpt(&mut self, location: Location, event: &EventRef<'_>, span: Option<ExcerptKey>) {
        if self.excerpt_capacity == 0 {
            return;
        }
        if self.excerpt.len() == self.excerpt_capacity {
            self.excerpt.pop_front();
        }
        let args = excerpt_args(event.args);
        let name = event.name.unwrap_or("");
        let mut line = format!("{location}: {name} {args}");
        // A post-only call that failed (tooltrace `status: error`) is whole here (only an end
        // is ever `failed`).
        if event.failed {
            line.push_str(FAILED_MARK);
        }
        self.excerpt.push_back((span, line));
    }

    /// The end of a call whose start had no arguments, while the end has them: the start's
    /// line in the excerpt shows them too (a judge reading `Bash {}` would miss what ran).
    pub(super) fn note_end_arguments(&mut self, span: ExcerptKey, args: ArgsRef<'_>) {
        if let Some((_, line)) = self.excerpt.iter_mut().rev().find(|(hash, _)| *hash == Some(span)) {
            line.push_str(" -> ended with ");
            line.push_str(&excerpt_args(args));
        }
    }

    /// The end of a call whose start is in the excerpt: a failure is marked on that line.
    pub(super) fn mark_failed(&mut self, span: ExcerptKey) {
        if let Some((_, line)) = self.excerpt.iter_mut().rev().find(|(hash, _)| *hash == Some(span))
            && !line.ends_with(FAILED_MARK)
        {
            line.push_str(FAILED_MARK);
        }
    }
}

impl SequenceEngine {
    /// Whether calls in some rule's scope wait for a span that has not come yet.
    fn awaits_spans(&self) -> bool {
        self.scopes.iter().flatten().any(|scope| scope.awaits_any())
    }
}

/// Whether a rule with a scope may change on the event: it opens a scope (matches the root),
/// may open a nested one (a container with a parent), or may step (a match of the relation,
/// with a parent that may be in scope).
#[inline]
fn concerns_scopes(masks: &RuleMasks, ids: &[RuleIds], prepared: &Prepared) -> bool {
    if !masks.scoped_wide {
        // `concerns_each_scope`, over all the rules at once.
        let low = prepared.bits.low;
        return low & masks.scoped_roots != 0
            || (prepared.has_parent()
                && (prepared.post_only_parent() || masks.scoped_always || low & masks.scoped_relations != 0));
    }
    concerns_each_scope(masks, ids, prepared)
}

/// [`concerns_scopes`], asking each rule with a scope.
fn concerns_each_scope(masks: &RuleMasks, ids: &[RuleIds], prepared: &Prepared) -> bool {
    let mut scoped = masks.scoped;
    while scoped != 0 {
        let idx = scoped.trailing_zeros() as usize;
        scoped &= scoped - 1;
        let Some(ids) = ids.get(idx) else { continue };
        let root = ids.within != usize::MAX && prepared.bits.get(ids.within);
        if root || (prepared.has_parent() && (prepared.post_only_parent() || ids.may_step(&prepared.bits))) {
            return true;
        }
    }
    false
}

/// Whether an event with a span goes with a summary's links: the rules with a scope do not
/// concern it (`need` false), or only as a root, since it has no parent (see `step`: nothing
/// without a parent is inside a scope), which the links mark.
fn goes_with_links(need: bool, prepared: &Prepared) -> bool {
    prepared.has_span() && (!need || !prepared.has_parent())
}

/// The rules with a scope whose root the event matches (bit `i`: rule `i`).
fn root_rules(masks: &RuleMasks, ids: &[RuleIds], prepared: &Prepared) -> u64 {
    let (mut scoped, mut roots) = (masks.scoped, 0);
    while scoped != 0 {
        let idx = scoped.trailing_zeros() as usize;
        scoped &= scoped - 1;
        if ids.get(idx).is_some_and(|ids| ids.within != usize::MAX && prepared.bits.get(ids.within)) {
            roots |= 1 << idx;
        }
    }
    roots
}

impl SequenceEngine {
    /// After [`SequenceEngine::apply_summary`] took `summary` in: gives the rules with a scope
    /// what they still need of the run, in trace order. `wanted` are the positions
    /// [`Summarizer::scoped_need`] marked (ascending), each with what `feed_wanted` needs to
    /// feed that event to [`SequenceEngine::feed_scoped`]; the run's links go to
    /// [`SequenceEngine::note_summary_link`] between them, and `feed(engine, k)` feeds the
    /// run's `k`-th event when that refuses it.
    pub fn feed_summary_calls<W>(
        &mut self,
        summary: &Summary,
        wanted: impl IntoIterator<Item = (usize, W)>,
        mut feed_wanted: impl FnMut(&mut SequenceEngine, W),
        mut feed: impl FnMut(&mut SequenceEngine, usize),
    ) {
        let mut pairs = summary.link_pairs.as_slice();
        let (mut roots, mut taken) = (summary.link_roots.as_slice(), 0);
        let mut take_until =
            |engine: &mut SequenceEngine, feed: &mut dyn FnMut(&mut SequenceEngine, usize), before: usize| {
                let count = summary.links_before(taken, before);
                let (run_pairs, rest_pairs) = pairs.split_at(count);
                pairs = rest_pairs;
                let first = taken;
                taken += count;
                let root_count = roots.iter().take_while(|&&(at, _)| (at as usize) < taken).count();
                let (run_roots, rest_roots) = roots.split_at(root_count);
                roots = rest_roots;
                if !engine.awaits_spans() {
                    // Nothing waits for a span, and noting links or opening scopes makes
                    // nothing wait: the whole run is recorded in one copy, without asking each
                    // link, and its roots open their scopes.
                    engine.links.note_all(run_pairs);
                    for &(at, rules) in run_roots {
                        engine.open_root(run_pairs[at as usize - first].0, rules);
                    }
                    return;
                }
                let mut run_roots = run_roots.iter().peekable();
                for (at, &(span, parent)) in (first..).zip(run_pairs) {
                    let index = summary.link_position(at);
                    let roots = run_roots.next_if(|&&(root, _)| root as usize == at).map_or(0, |&(_, rules)| rules);
                    if !engine.note_summary_link(&SummaryLink { index, span, parent, roots }) {
                        feed(engine, index as usize);
                    }
                }
            };
        for (k, event) in wanted {
            take_until(self, &mut feed, k);
            feed_wanted(self, event);
        }
        take_until(self, &mut feed, usize::MAX);
    }

    /// Takes in a call of [`Summary::links`] of an applied summary, in trace order among the
    /// calls of [`SequenceEngine::feed_scoped`]: records its parent (or that it has none).
    /// That is all [`SequenceEngine::feed_scoped`] would do with it unless calls
    /// under it came first and wait for it: then this answers false and the call must go
    /// through [`SequenceEngine::feed_scoped`] instead. A link that is a scope root opens its
    /// scopes here, as feeding it would.
    pub fn note_summary_link(&mut self, link: &SummaryLink) -> bool {
        if self.scopes.iter().flatten().any(|scope| scope.awaits(by_hash(link.span))) {
            return false;
        }
        self.links.note(link.span, link.parent);
        self.open_root(link.span, link.roots);
        true
    }

    /// What feeding a post-only call without a parent that matches the root of `rules` (bit
    /// `i`: rule `i`) does to the scopes when nothing waits for it (see `step`): each opens at
    /// it. It is inside no scope, so no rule steps.
    fn open_root(&mut self, span: u64, mut rules: u64) {
        while rules != 0 {
            let idx = rules.trailing_zeros() as usize;
            rules &= rules - 1;
            if let Some(Some(scope)) = self.scopes.get_mut(idx) {
                scope.rooted = true;
                scope.open_ended(span);
                scope.opened_at(span);
            }
        }
    }
}

impl Summarizer {
    /// Adds the next event of the run (prepared by [`MatchPlan::prepare`] of the same
    /// engine), and answers whether the rules with a scope need it too
    /// ([`Summarizer::scoped_need`], worked out once here).
    #[inline]
    pub fn push(&mut self, event: &EventRef<'_>, prepared: &Prepared) -> bool {
        let index = self.run.events;
        if self.reads_arguments
            && prepared.is_call_end()
            && !prepared.is_agent()
            && let Some(as_text) = super::unreadable_arguments(event.args)
        {
            self.run.note_unread_arguments(event, index, as_text);
        }
        match index.checked_add(1) {
            Some(events) => self.run.events = events,
            // Positions would wrap: the engine refuses the summary, the events go one by one.
            None => self.run.mergeable = false,
        }
        if !prepared.is_call_end() {
            self.run.mergeable = false;
        }
        self.run.agents |= prepared.is_agent();
        let bits = &prepared.bits;
        let mut todo = self.masks.stepped(bits) & !self.masks.scoped;
        while todo != 0 {
            let idx = todo.trailing_zeros() as usize;
            todo &= todo - 1;
            if let (Some(partial), Some(ids)) = (self.run.partials.get_mut(idx), self.ids.get(idx)) {
                step_partial(partial, ids, index, bits);
            }
        }
        // A post-only call with a span of its own may have calls under it: the engine records
        // its parent, or that it has none (those the scoped rules need anyway go to
        // `feed_scoped`, which does the same).
        if self.masks.scoped == 0 {
            return false;
        }
        self.run.parented |= prepared.tool_with_parent();
        let need = concerns_scopes(&self.masks, &self.ids, prepared);
        let link = goes_with_links(need, prepared);
        if link {
            let parent = if prepared.has_parent() { prepared.parent_hash } else { 0 };
            if need {
                let roots = root_rules(&self.masks, &self.ids, prepared);
                self.run.link_roots.push((self.run.link_pairs.len() as u32, roots));
            }
            self.run.push_link(index, (prepared.span_hash, parent));
        }
        need && !link
    }

    /// Whether a rule with a scope can change on this event, so that it goes to
    /// [`SequenceEngine::feed_scoped`] even when its run's summary is applied: it may open a
    /// nested scope (a container with a parent), or may step (a match of the relation, with a
    /// parent that may be in scope), or it opens a scope (matches the root) but has no span,
    /// so it cannot go with the links. A root with a span and no parent goes with the links,
    /// which open its scope ([`SequenceEngine::note_summary_link`]).
    pub fn scoped_need(&self, prepared: &Prepared) -> bool {
        let need = self.masks.scoped != 0 && concerns_scopes(&self.masks, &self.ids, prepared);
        need && !goes_with_links(need, prepared)
    }

    /// The summary of the run so far; the next event starts a new run.
    pub fn finish(&mut self) -> Summary {
        // The next run is likely as long as this one: its lists start at this run's sizes
        // (grown one doubling at a time, they were copied over and over, for every block).
        let fresh = Summary {
            events: 0,
            mergeable: true,
            partials: self.kinds.clone(),
            link_index: Vec::with_capacity(self.run.link_index.len()),
            link_pairs: Vec::with_capacity(self.run.link_pairs.len()),
            link_roots: Vec::with_capacity(self.run.link_roots.len()),
            ..Summary::default()
        };
        std::mem::replace(&mut self.run, fresh)
    }
}

/// One event of a run for one rule (the engine's `step_rule`, by position).
#[inline]
fn step_partial(partial: &mut Partial, ids: &RuleIds, here: u32, bits: &MatchBits) {
    let (a, b) = (bits.get(ids.first), ids.second != usize::MAX && bits.get(ids.second));
    match partial {
        Partial::Before { first_a, first_b } => {
            if b && first_b.is_none() {
                *first_b = Some(here);
            }
            if a && first_a.is_none() {
                *first_a = Some(here);
            }
        }
        Partial::OnlyAfter { first_a, first_b, unpreceded_b } => {
            if b {
                if first_b.is_none() {
                    *first_b = Some(here);
                }
                if first_a.is_none() && unpreceded_b.is_none() {
                    *unpreceded_b = Some(here);
                }
            }
            if a && first_a.is_none() {
                *first_a = Some(here);
            }
        }
        Partial::ImmediatelyBefore { count_b, first_b, first_is_b, violation, last_is_a } => {
            if b {
                *count_b += 1;
                if first_b.is_none() {
                    *first_b = Some(here);
                }
                if here == 0 {
                    *first_is_b = true;
                } else if !*last_is_a && violation.is_none() {
                    *violation = Some(here);
                }
            }
            *last_is_a = a;
        }
        Partial::Never { first, count } => {
            if a {
                *count += 1;
                if first.is_none() {
                    *first = Some(here);
                }
            }
        }
        Partial::Count { count } => {
            if a {
                *count += 1;
            }
        }
        Partial::Scoped => {}
    }
}

#[cfg(test)]
mod tests {
    use agentic_core::EventType;

    use super::super::{CompiledRule, EventRef, SequenceRule, compile_rule};
    use super::*;

    fn engine() -> SequenceEngine {
        let rule: SequenceRule =
            serde_json::from_value(serde_json::json!({"count": {"of": {"tool": "Read"}, "at_least": 1}})).unwrap();
        let rules: Vec<CompiledRule> = compile_rule(&rule, "/r", &mut Vec::new()).into_iter().collect();
        SequenceEngine::new(rules, 0)
    }

    /// Links are listed by position only from the first event that is not one on.
    #[test]
    fn link_positions_are_listed_from_the_first_gap() {
        let mut summary = Summary::default();
        for index in [0, 1, 2] {
            summary.push_link(index, (u64::from(index) + 1, 0));
        }
        assert!(summary.link_index.is_empty());
        assert_eq!(summary.links_before(1, 2), 1);
        summary.push_link(4, (5, 0));
        summary.push_link(5, (6, 0));
        assert_eq!(summary.link_index, [0, 1, 2, 4, 5]);
        let positions: Vec<u32> = summary.links().map(|link| link.index).collect();
        assert_eq!(positions, [0, 1, 2, 4, 5]);
        assert_eq!(summary.links_before(0, 4), 3);
        assert_eq!(summary.links_before(3, usize::MAX), 2);
    }

    /// The masks answer like asking each rule with a scope, on any matches and flags.
    #[test]
    fn scoped_masks_answer_like_each_rule() {
        let rules: Vec<CompiledRule> = [
            serde_json::json!({"never": {"tool": "Write"}, "within": {"tool": "Task"}}),
            serde_json::json!({"count": {"of": {"tool": "Read"}, "at_least": 1}}),
            serde_json::json!({"before": {"a": {"tool": "Read"}, "b": {"tool": "Edit"}}, "within": {"agent": "r"}}),
        ]
        .into_iter()
        .flat_map(|value| {
            let rule: SequenceRule = serde_json::from_value(value).unwrap();
            compile_rule(&rule, "/r", &mut Vec::new())
        })
        .collect();
        let summarizer = SequenceEngine::new(rules, 0).summarizer().expect("three rules");
        let masks = &summarizer.masks;
        assert!(!masks.scoped_wide);
        for low in 0..1u64 << 9 {
            for flags in 0..32 {
                let prepared = Prepared { bits: MatchBits { low, more: None }, span_hash: 1, parent_hash: 2, flags };
                assert_eq!(
                    concerns_scopes(masks, &summarizer.ids, &prepared),
                    concerns_each_scope(masks, &summarizer.ids, &prepared),
                    "matches {low:b}, flags {flags:b}"
                );
            }
        }
    }

    /// A run longer than `u32` positions neither panics nor wraps: its summary is refused
    /// (and the caller feeds the events one by one).
    #[test]
    fn a_run_too_long_for_its_positions_is_refused() {
        let mut engine = engine();
        let plan = engine.match_plan();
        let mut summarizer = engine.summarizer().expect("one rule");
        let read = EventRef {
            event_type: EventType::ToolCallEnd,
            name: Some("Read"),
            args: ArgsRef::None,
            span_id: None,
            parent_span_id: None,
            call_id: None,
            trace_id: None,
            post_only_parent: false,
            failed: false,
            line: Some(1),
            seq: 1,
        };
        let prepared = plan.prepare(&read);
        summarizer.run.events = u32::MAX - 1;
        summarizer.push(&read, &prepared);
        let summary = summarizer.finish();
        assert!(summary.mergeable, "one more event still fits");
        summarizer.run.events = u32::MAX;
        summarizer.push(&read, &prepared);
        let summary = summarizer.finish();
        assert!(!summary.mergeable);
        assert!(!engine.apply_summary(&summary, |k| (Some(u64::from(k)), u64::from(k))));
        assert_eq!(engine.finish().events, 0);
    }
}
