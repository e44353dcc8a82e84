//! Record layouts: the shapes of tooltrace lines seen before, to read the next line of the
//! same shape without parsing its structure again.
//!
//! A program that writes a trace writes every record the same way: the same keys in the same
//! order with the same separators; only the values change. A *layout* is that shape: the
//! exact bytes between the values (`{"timestamp":"`, `","tool_name":"`, ...) and, for each
//! value, the field it fills. [`Layouts`] keeps the layouts of lines the full scanner
//! accepted as a trie (layouts that start alike share their first steps) and reads a new
//! line by comparing those bytes a word at a time and scanning only the values.
//!
//! **Exactness.** A path through the trie is one learned line's shape, and the bytes between
//! its values are compared exactly, so a line that follows a path is tokenized the way the
//! full scanner tokenized the learned line: same keys, same order, values of the same kind
//! scanned by the same functions. A line that leaves every path is read by the full scanner,
//! which may then learn its shape.

use std::ops::Range;

use agentic_core::json_scan::{JsonScanner, bytes_eq};

use super::tooltrace::{CheckedHour, Field, Fields, Key, field_slot};

/// The longest run of bytes between two values a layout keeps.
const MAX_LITERAL: usize = 32;
/// The most nodes the trie grows to; then it stops learning.
const MAX_NODES: usize = 256;
/// The most members a learned record has.
const MAX_MEMBERS: usize = 24;

/// One member of an accepted record, as the full scanner found it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Member {
    pub(super) key: Key,
    /// For a plain string: its content (between the quotes); otherwise the whole value.
    pub(super) value: (usize, usize),
    pub(super) plain: bool,
}

/// The bytes between two values (zero after `len`, so equal literals are equal values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Literal {
    bytes: [u8; MAX_LITERAL],
    len: usize,
}

impl Literal {
    fn new(text: &[u8]) -> Option<Literal> {
        let mut bytes = [0u8; MAX_LITERAL];
        bytes.get_mut(..text.len())?.copy_from_slice(text);
        Some(Literal { bytes, len: text.len() })
    }

    fn text(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    /// True when `bytes` has this literal at `pos`.
    #[inline(always)]
    fn at(&self, bytes: &[u8], pos: usize) -> bool {
        bytes.get(pos..pos + self.len).is_some_and(|window| bytes_eq(window, self.text()))
    }
}

/// What follows a literal.
#[derive(Debug, Clone, Copy)]
enum Next {
    /// A value of `key`: a plain string (the literal ended with its opening quote) or any
    /// value; then the trie goes on at `node`.
    Value { key: Key, plain: bool, node: u32 },
    /// The literal closed the record.
    End,
}

#[derive(Debug, Clone, Copy)]
struct Edge {
    literal: Literal,
    next: Next,
    /// For an edge from the start of a line: the whitespace before the record's `{`.
    lead: u8,
}

/// The learned layouts; one per worker thread.
#[derive(Debug, Default)]
pub(crate) struct Layouts {
    /// Node 0 is the start of a line; each node lists the literals that may follow.
    nodes: Vec<Vec<Edge>>,
    /// The members of the line the full scanner reads, kept for the next such line.
    members: Vec<Member>,
    /// The date and hour of the last timestamp checked on this thread.
    pub(super) hour: CheckedHour,
}

impl Layouts {
    /// Reads the record at `start` into `fields` (all absent before) if it follows a learned
    /// layout: the range of its text, and the position after it (before any whitespace that
    /// ends the line).
    #[inline(always)]
    pub(super) fn read(&self, bytes: &[u8], start: usize, fields: &mut Fields) -> Option<(Range<usize>, usize)> {
        let mut scanner = JsonScanner::new(bytes, start);
        let root = self.nodes.first()?.iter().find(|edge| edge.literal.at(bytes, start))?;
        let record_start = start + usize::from(root.lead);
        let mut edge = root;
        loop {
            scanner.advance(edge.literal.len);
            let Next::Value { key, plain, node } = edge.next else {
                return Some((record_start..scanner.pos(), scanner.pos()));
            };
            let value_start = scanner.pos();
            if plain {
                let (end, false) = scanner.string_tail()? else { return None };
                if let Some(slot) = field_slot(fields, key) {
                    *slot = Field::of(value_start..end);
                }
            } else {
                // An object's members are scanned in line (most `args` are objects).
                if scanner.eat(b'{').is_some() {
                    scanner.object(1)?;
                } else {
                    scanner.value(1)?;
                }
                if key == Key::Args {
                    fields.args = Field::of(value_start..scanner.pos());
                }
            }
            let pos = scanner.pos();
            edge = self.nodes.get(node as usize)?.iter().find(|edge| edge.literal.at(bytes, pos))?;
        }
    }

    /// An empty list for the members of a line the full scanner reads (its buffer reused).
    pub(super) fn take_members(&mut self) -> Vec<Member> {
        let mut members = std::mem::take(&mut self.members);
        members.clear();
        members
    }

    /// Gives the list back after the line.
    pub(super) fn give_members(&mut self, members: Vec<Member>) {
        self.members = members;
    }

    /// Learns the layout of an accepted record: `members` in order, `record` its text range
    /// (the line starts at `line_start`).
    pub(super) fn learn(&mut self, bytes: &[u8], line_start: usize, members: &[Member], record: Range<usize>) {
        if members.len() > MAX_MEMBERS {
            return;
        }
        if self.nodes.is_empty() {
            self.nodes.push(Vec::new());
        }
        let lead = (record.start - line_start).min(usize::from(u8::MAX)) as u8;
        let mut node = 0usize;
        let mut from = line_start;
        for member in members {
            let Some(literal) = bytes.get(from..member.value.0).and_then(Literal::new) else { return };
            let Some(next) = self.step(node, literal, member.key, member.plain, lead) else { return };
            node = next;
            // A plain string's closing quote starts the next literal's bytes.
            from = if member.plain { member.value.1 + 1 } else { member.value.1 };
        }
        let Some(literal) = bytes.get(from..record.end).and_then(Literal::new) else { return };
        let edges = &mut self.nodes[node];
        if !edges.iter().any(|edge| matches!(edge.next, Next::End) && edge.literal == literal) {
            edges.push(Edge { literal, next: Next::End, lead });
        }
    }

    /// The node after `literal` and a value of `key` from `node`, added when new.
    fn step(&mut self, node: usize, literal: Literal, key: Key, plain: bool, lead: u8) -> Option<usize> {
        let found = self.nodes[node].iter().find_map(|edge| match edge.next {
            Next::Value { key: k, plain: p, node: next } if k == key && p == plain && edge.literal == literal => {
                Some(next as usize)
            }
            _ => None,
        });
        if found.is_some() {
            return found;
        }
        if self.nodes.len() >= MAX_NODES {
            return None;
        }
        let next = self.nodes.len();
        self.nodes.push(Vec::new());
        self.nodes[node].push(Edge { literal, next: Next::Value { key, plain, node: next as u32 }, lead });
        Some(next)
    }
}
