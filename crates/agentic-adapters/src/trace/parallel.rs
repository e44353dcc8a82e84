//! Reading a trace on several threads with exactly the results of the one-thread reader.
//!
//! Worker threads take turns reading the input in blocks of whole lines (about 1 MiB; a block
//! always ends with a newline or at the end of the input; the turn is a lock, so blocks are
//! cut and queued in input order). A worker checks its block is UTF-8 once, splits it into lines, runs the strict tooltrace
//! scanner ([`TooltraceAdapter::view`]) on every line and, for each line it accepts, calls
//! the caller's `prepare` (for example: which rule matchers the call satisfies). The calling
//! thread then runs the *same* [`TraceReader`] logic as [`TraceReader::for_each_item`] over
//! the blocks in input order, through a [`BufRead`] over the blocks: a line the worker
//! accepted is yielded from the worker's result without scanning it again; every other
//! line (a malformed record, a multi-line document, another format, a line too long) takes
//! the reader's ordinary path on the very same bytes. So line numbers, `seq`, errors and
//! events are those of the one-thread reader, and only the work per accepted line moves to
//! the workers.
//!
//! Memory is bounded: at most [`IN_FLIGHT_PER_WORKER`] queued blocks per worker, plus one
//! being scanned per worker and one being consumed, exist at once, and their buffers are reused; a block only grows beyond its
//! size to hold one long line (up to [`MAX_RECORD_BYTES`]).

use std::io::{BufRead, Read};
use std::ops::{ControlFlow, Range};
use std::sync::{Mutex, mpsc};

use agentic_core::EventType;

use super::tooltrace::find_byte;
use super::{
    MAX_RECORD_BYTES, Queued, TooltraceAdapter, TooltraceView, TraceError, TraceFormat, TraceItem, TraceReader,
};

/// The size of one block.
pub const BLOCK_BYTES: usize = 1 << 20;

/// Blocks in flight per worker.
pub const IN_FLIGHT_PER_WORKER: usize = 3;

/// Streams every item of a trace to `visit` in trace order, exactly like
/// [`TraceReader::for_each_item`] on the same input, using `workers` threads to scan lines.
///
/// Every thread (each worker, and the calling thread for lines it scans itself) gets its own
/// `prepare` from `make_prepare` (so it can own caches, such as a regex's); for each
/// well-formed tooltrace line `prepare` runs on its view and `visit` receives the result with
/// the item (`Some`); events of the full adapter come with `None`. With `workers == 0`
/// nothing runs in parallel: this is then `for_each_item` with `prepare` called in line.
pub fn for_each_item_parallel<R, S, M, P, V>(
    reader: R,
    format: Option<TraceFormat>,
    workers: usize,
    make_prepare: M,
    visit: V,
) where
    R: Read + Send,
    S: Send,
    M: Fn() -> P + Sync,
    P: FnMut(&TooltraceView<'_>) -> S,
    V: FnMut(Result<TraceItem<'_>, TraceError>, Option<&S>) -> ControlFlow<()>,
{
    run(reader, format, workers, BLOCK_BYTES, make_prepare, visit);
}

/// [`for_each_item_parallel`] with a given block size (tests use tiny blocks).
pub(super) fn run<R, S, M, P, V>(
    reader: R,
    format: Option<TraceFormat>,
    workers: usize,
    block_bytes: usize,
    make_prepare: M,
    mut visit: V,
) where
    R: Read + Send,
    S: Send,
    M: Fn() -> P + Sync,
    P: FnMut(&TooltraceView<'_>) -> S,
    V: FnMut(Result<TraceItem<'_>, TraceError>, Option<&S>) -> ControlFlow<()>,
{
    let mut prepare = make_prepare();
    if workers == 0 {
        let mut reader = TraceReader::new(std::io::BufReader::with_capacity(block_bytes.max(1), reader), format);
        reader.for_each_item(|item| match item {
            Ok(TraceItem::Tooltrace(view)) => {
                let prepared = prepare(&view);
                visit(Ok(TraceItem::Tooltrace(view)), Some(&prepared))
            }
            other => visit(other, None),
        });
        return;
    }
    let input = Mutex::new(Input {
        reader,
        block_bytes: block_bytes.max(1),
        carry: Vec::new(),
        eof: false,
        error: None,
        finished: false,
    });
    let (slot_sender, slots) = mpsc::sync_channel::<Slot<S>>(workers * IN_FLIGHT_PER_WORKER);
    let (recycle, recycled) = mpsc::channel::<(Vec<u8>, Vec<Entry<S>>)>();
    let recycled = Mutex::new(recycled);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let (input, recycled, make_prepare) = (&input, &recycled, &make_prepare);
            let slot_sender = slot_sender.clone();
            scope.spawn(move || {
                let mut prepare = make_prepare();
                while let Some((block, mut entries, reply)) = take_block(input, recycled, &slot_sender) {
                    let data = scan_block(block, &mut entries, &mut prepare);
                    if reply.send(Done { data, entries }).is_err() {
                        return;
                    }
                }
            });
        }
        // Only the workers hold senders now: `slots` ends when the last of them stops.
        drop(slot_sender);
        let lines = BlockLines { slots, recycle, error: None, ended: false, current: None, pos: 0, next_entry: 0 };
        let mut trace = TraceReader::new(lines, format);
        trace.for_each_prepared(&mut prepare, &mut visit);
        // Dropping the reader drops `slots`, so workers stop at their next block.
        drop(trace);
    });
}

/// The input, read in order by whichever worker holds the lock.
struct Input<R> {
    reader: R,
    block_bytes: usize,
    carry: Vec<u8>,
    eof: bool,
    error: Option<std::io::Error>,
    finished: bool,
}

/// What the calling thread receives, in input order.
enum Slot<S> {
    /// A block a worker is scanning; its result comes on this channel.
    Block(mpsc::Receiver<Done<S>>),
    /// Reading failed here.
    Error(std::io::Error),
}

/// Reads the next block (holding the input lock, so blocks are cut and queued in order)
/// and queues its slot; `None` when there is nothing more to do.
#[allow(clippy::type_complexity)]
fn take_block<R: Read, S>(
    input: &Mutex<Input<R>>,
    recycled: &Mutex<mpsc::Receiver<(Vec<u8>, Vec<Entry<S>>)>>,
    slots: &mpsc::SyncSender<Slot<S>>,
) -> Option<(Vec<u8>, Vec<Entry<S>>, mpsc::SyncSender<Done<S>>)> {
    let mut input = input.lock().ok()?;
    if input.finished {
        return None;
    }
    let (spare, entries) = recycled.lock().ok().and_then(|r| r.try_recv().ok()).unwrap_or_default();
    match input.read_block(spare) {
        Some(block) => {
            let (reply, done) = mpsc::sync_channel(1);
            if slots.send(Slot::Block(done)).is_err() {
                input.finished = true;
                return None;
            }
            Some((block, entries, reply))
        }
        None => {
            input.finished = true;
            if let Some(error) = input.error.take() {
                let _ = slots.send(Slot::Error(error));
            }
            None
        }
    }
}

struct Done<S> {
    data: BlockData,
    entries: Vec<Entry<S>>,
}

enum BlockData {
    /// The block is valid UTF-8 (the common case).
    Text(String),
    /// It is not: no line of it takes the fast path.
    Bytes(Vec<u8>),
}

impl BlockData {
    fn bytes(&self) -> &[u8] {
        match self {
            BlockData::Text(text) => text.as_bytes(),
            BlockData::Bytes(bytes) => bytes,
        }
    }

    fn into_bytes(self) -> Vec<u8> {
        match self {
            BlockData::Text(text) => text.into_bytes(),
            BlockData::Bytes(bytes) => bytes,
        }
    }
}

/// One line of a block: where it starts and, when the scanner accepted it, its fields.
struct Entry<S> {
    start: usize,
    fast: Option<Fast<S>>,
}

/// A [`TooltraceView`] as byte ranges into the block (compact: the consumer reads one per
/// line), with the prepared value.
struct Fast<S> {
    event_type: EventType,
    span_type_parent: bool,
    tool_name: Span,
    span_id: Span,
    parent_span_id: Span,
    args: Span,
    raw: Span,
    prepared: S,
}

/// A byte range of a block (blocks are below 4 GiB); [`Span::NONE`] for an absent field.
#[derive(Clone, Copy)]
struct Span {
    start: u32,
    end: u32,
}

impl Span {
    const NONE: Span = Span { start: u32::MAX, end: u32::MAX };

    fn of(range: Range<usize>) -> Span {
        Span { start: range.start as u32, end: range.end as u32 }
    }

    fn get(self, text: &str) -> Option<&str> {
        if self.start == u32::MAX {
            return None;
        }
        text.get(self.start as usize..self.end as usize)
    }
}

/// Splits a block into lines and scans each (on a worker).
fn scan_block<S>(
    block: Vec<u8>,
    entries: &mut Vec<Entry<S>>,
    prepare: &mut impl FnMut(&TooltraceView<'_>) -> S,
) -> BlockData {
    entries.clear();
    let text = match String::from_utf8(block) {
        Ok(text) => text,
        Err(error) => {
            let bytes = error.into_bytes();
            let mut start = 0;
            while start < bytes.len() {
                entries.push(Entry { start, fast: None });
                start = find_byte(b'\n', &bytes[start..]).map_or(bytes.len(), |nl| start + nl + 1);
            }
            return BlockData::Bytes(bytes);
        }
    };
    let base = text.as_ptr() as usize;
    let range = |part: &str| {
        let start = part.as_ptr() as usize - base;
        start..start + part.len()
    };
    let mut start = 0;
    while start < text.len() {
        let bytes = &text.as_bytes()[start..];
        let (end, next) = match find_byte(b'\n', bytes) {
            Some(nl) => (start + nl, start + nl + 1),
            None => (text.len(), text.len()),
        };
        let has_newline = next > end;
        // The reader rejects a line longer than the limit (counting its newline).
        let fast = if next - start > MAX_RECORD_BYTES {
            None
        } else {
            let mut content = &text[start..end];
            if has_newline && let Some(stripped) = content.strip_suffix('\r') {
                content = stripped;
            }
            let trimmed = content.trim();
            if trimmed.is_empty() {
                None
            } else {
                TooltraceAdapter::view(trimmed, 0).map(|view| Fast {
                    event_type: view.event_type,
                    span_type_parent: view.span_type_parent,
                    tool_name: Span::of(range(&view.tool_name)),
                    span_id: view.span_id.as_deref().map_or(Span::NONE, |s| Span::of(range(s))),
                    parent_span_id: view.parent_span_id.as_deref().map_or(Span::NONE, |s| Span::of(range(s))),
                    args: view.args.map_or(Span::NONE, |s| Span::of(range(s))),
                    raw: Span::of(range(trimmed)),
                    prepared: prepare(&view),
                })
            }
        };
        entries.push(Entry { start, fast });
        start = next;
    }
    BlockData::Text(text)
}

/// A [`BufRead`] over the blocks in input order (on the calling thread).
pub(super) struct BlockLines<S> {
    slots: mpsc::Receiver<Slot<S>>,
    recycle: mpsc::Sender<(Vec<u8>, Vec<Entry<S>>)>,
    error: Option<std::io::Error>,
    ended: bool,
    current: Option<Done<S>>,
    pos: usize,
    next_entry: usize,
}

impl<R: Read> Input<R> {
    /// Reads the next block of whole lines into `block` (a reused buffer); `None` at the end
    /// of the input (a read error is kept in `error`, after the data read before it).
    fn read_block(&mut self, mut block: Vec<u8>) -> Option<Vec<u8>> {
        if self.eof && self.carry.is_empty() {
            return None;
        }
        if block.len() < self.block_bytes {
            block.resize(self.block_bytes, 0);
        }
        let mut filled = self.carry.len();
        if block.len() < filled + 1 {
            block.resize(filled + 1, 0);
        }
        block[..filled].copy_from_slice(&self.carry);
        self.carry.clear();
        let mut searched = 0;
        loop {
            while filled < block.len() && !self.eof {
                match self.reader.read(&mut block[filled..]) {
                    Ok(0) => self.eof = true,
                    Ok(read) => filled += read,
                    Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(error) => {
                        self.eof = true;
                        self.error = Some(error);
                    }
                }
            }
            if let Some(last) = block[searched..filled].iter().rposition(|b| *b == b'\n') {
                let end = searched + last + 1;
                self.carry.extend_from_slice(&block[end..filled]);
                block.truncate(end);
                return Some(block);
            }
            if self.eof {
                if filled == 0 {
                    return None;
                }
                block.truncate(filled);
                return Some(block);
            }
            // One line longer than the block.
            searched = filled;
            if block.len() > MAX_RECORD_BYTES + 1 {
                // The reader reports a line this long and skips to its end; keep just
                // enough of it for that, and drop the rest up to its newline.
                block.truncate(MAX_RECORD_BYTES + 1);
                self.skip_to_newline();
                block.push(b'\n');
                return Some(block);
            }
            let grown = (block.len() * 2).min(MAX_RECORD_BYTES + 2);
            block.resize(grown, 0);
        }
    }

    /// Discards input up to and including the next newline; what follows it is carried.
    fn skip_to_newline(&mut self) {
        let mut scratch = vec![0u8; 64 * 1024];
        while !self.eof {
            match self.reader.read(&mut scratch) {
                Ok(0) => self.eof = true,
                Ok(read) => {
                    if let Some(nl) = find_byte(b'\n', &scratch[..read]) {
                        self.carry.extend_from_slice(&scratch[nl + 1..read]);
                        return;
                    }
                }
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(error) => {
                    self.eof = true;
                    self.error = Some(error);
                }
            }
        }
    }
}

impl<S> BlockLines<S> {
    /// Makes sure a block with unread bytes is current; false at the end of the input.
    fn ensure_block(&mut self) -> bool {
        loop {
            if let Some(current) = &self.current
                && self.pos < current.data.bytes().len()
            {
                return true;
            }
            if let Some(done) = self.current.take() {
                let mut block = done.data.into_bytes();
                let capacity = block.capacity();
                block.resize(capacity, 0);
                let _ = self.recycle.send((block, done.entries));
            }
            if self.ended {
                return false;
            }
            match self.slots.recv() {
                Ok(Slot::Block(done)) => match done.recv() {
                    Ok(done) => {
                        self.current = Some(done);
                        self.pos = 0;
                        self.next_entry = 0;
                    }
                    Err(_) => {
                        self.ended = true;
                        return false;
                    }
                },
                Ok(Slot::Error(error)) => {
                    self.error = Some(error);
                    self.ended = true;
                    return false;
                }
                Err(_) => {
                    self.ended = true;
                    return false;
                }
            }
        }
    }

    /// The worker's result for the line starting at the current position, if it accepted it.
    fn peek_fast(&mut self) -> Option<&Fast<S>> {
        if !self.ensure_block() {
            return None;
        }
        let current = self.current.as_ref()?;
        let entry = current.entries.get(self.next_entry)?;
        if entry.start != self.pos {
            return None;
        }
        entry.fast.as_ref()
    }

    /// The view of an accepted line (see [`BlockLines::peek_fast`]).
    fn view(&self, fast: &Fast<S>, line: u64, seq: u64) -> Option<TooltraceView<'_>> {
        let BlockData::Text(text) = &self.current.as_ref()?.data else { return None };
        Some(TooltraceView {
            event_type: fast.event_type,
            tool_name: std::borrow::Cow::Borrowed(fast.tool_name.get(text)?),
            span_id: fast.span_id.get(text).map(std::borrow::Cow::Borrowed),
            parent_span_id: fast.parent_span_id.get(text).map(std::borrow::Cow::Borrowed),
            span_type_parent: fast.span_type_parent,
            args: fast.args.get(text),
            line,
            seq,
            raw: fast.raw.get(text)?,
        })
    }

    /// Moves past the line starting at the current position.
    fn skip_line(&mut self) {
        let Some(current) = &self.current else { return };
        let next = current.entries.get(self.next_entry + 1).map_or(current.data.bytes().len(), |entry| entry.start);
        self.pos = next;
        self.next_entry += 1;
    }
}

impl<S> Read for BlockLines<S> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let available = self.fill_buf()?;
        let count = available.len().min(out.len());
        out[..count].copy_from_slice(&available[..count]);
        self.consume(count);
        Ok(count)
    }
}

impl<S> BufRead for BlockLines<S> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if !self.ensure_block() {
            // A read error is reported once; the input ends after it.
            if let Some(error) = self.error.take() {
                return Err(error);
            }
            return Ok(&[]);
        }
        match &self.current {
            Some(current) => Ok(&current.data.bytes()[self.pos..]),
            None => Ok(&[]),
        }
    }

    fn consume(&mut self, amount: usize) {
        self.pos += amount;
        if let Some(current) = &self.current {
            while current.entries.get(self.next_entry).is_some_and(|entry| entry.start < self.pos) {
                self.next_entry += 1;
            }
        }
    }
}

impl<S> TraceReader<BlockLines<S>> {
    /// [`TraceReader::for_each_item`] over blocks the workers already scanned.
    fn for_each_prepared<P, V>(&mut self, prepare: &mut P, visit: &mut V)
    where
        P: FnMut(&TooltraceView<'_>) -> S,
        V: FnMut(Result<TraceItem<'_>, TraceError>, Option<&S>) -> ControlFlow<()>,
    {
        loop {
            match self.step_queued(visit) {
                Queued::Stop => return,
                Queued::Visited => continue,
                Queued::ReadLine => {}
            }
            if self.reader.peek_fast().is_some() {
                self.line += 1;
                self.seq += 1;
                let (line, seq) = (self.line, self.seq);
                let lines = &self.reader;
                let fast = lines.current.as_ref().and_then(|current| current.entries.get(lines.next_entry));
                let flow = match fast.and_then(|entry| entry.fast.as_ref()) {
                    Some(fast) => match lines.view(fast, line, seq) {
                        Some(view) => visit(Ok(TraceItem::Tooltrace(view)), Some(&fast.prepared)),
                        None => ControlFlow::Continue(()),
                    },
                    None => ControlFlow::Continue(()),
                };
                self.reader.skip_line();
                if flow.is_break() {
                    return;
                }
                continue;
            }
            // The workers did not accept this line; as in `for_each_item`, it is scanned here
            // (it may still pass when its block as a whole was not UTF-8), else it goes
            // through the full adapter.
            if self.step_line(prepare, visit).is_break() {
                return;
            }
        }
    }
}
