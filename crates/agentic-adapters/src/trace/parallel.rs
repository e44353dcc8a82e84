//! Reading a trace file on several threads with exactly the results of the one-thread reader.
//!
//! The input is read at offsets ([`ReadAt`], a file), so no thread waits for another to read.
//! The scanning threads (the calling thread is one of them) claim blocks of [`BLOCK_BYTES`]
//! in turn: block `k` owns the lines that *start* in its byte range, reads them with one
//! positional read into a buffer that stays in the core's cache (plus the rest of its last
//! line), checks the bytes are UTF-8 once, and runs the strict tooltrace scanner on every
//! line (a line of a shape seen before is read by its layout, see `layout.rs`). For each line
//! it accepts, the thread's [`LineWork`] runs there too (for example: which rule matchers the
//! call satisfies), and again at the end of the block.
//!
//! The calling thread takes the blocks in input order and walks their lines: a block of
//! nothing but accepted records (and blank lines) goes to the visitor in one
//! [`Batch::Records`]; otherwise an accepted line is visited straight from the thread's
//! result (never scanned again); a blank line only counts; every other line (a malformed
//! record, a multi-line document, a record the scanner does not take, a line too long for a
//! block) goes through the *same* [`TraceReader`] as the one-thread path, which reads it from
//! the input at its offset, and the walk resumes after whatever that reader consumed. The
//! first record (which tells the format) is read that way too, and a trace of another format
//! is read by that reader alone. So line numbers, `seq`, errors and events are those of the
//! one-thread reader, and only the work per accepted line moves to the scanning threads.
//!
//! Memory is bounded: at most [`IN_FLIGHT_PER_WORKER`] blocks per thread exist at once, and
//! their buffers are reused (each thread its own); a block grows beyond its size only to
//! finish its last line, up to [`LINE_TAIL_BYTES`] (a longer line is left to the one-thread
//! reader).

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::ops::ControlFlow;
use std::sync::{Condvar, Mutex, mpsc};

use super::layout::Layouts;
use super::tooltrace::{Line, Record, scan_line};
use super::{Queued, TooltraceView, TraceError, TraceFormat, TraceItem, TraceReader};

/// The size of one block.
pub const BLOCK_BYTES: usize = 256 * 1024;

/// Blocks in flight per worker.
pub const IN_FLIGHT_PER_WORKER: usize = 2;

/// How far a worker reads past its block to finish the last line that starts in it.
pub const LINE_TAIL_BYTES: usize = 1024 * 1024;

/// Input that can be read at any offset, from several threads at once (a file).
pub trait ReadAt: Sync {
    /// Reads into `buf` from `offset`; `Ok(0)` only at the end of the input.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize>;
}

#[cfg(unix)]
impl ReadAt for std::fs::File {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        std::os::unix::fs::FileExt::read_at(self, buf, offset)
    }
}

impl ReadAt for [u8] {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        let start = usize::try_from(offset).unwrap_or(usize::MAX).min(self.len());
        let count = buf.len().min(self.len() - start);
        buf[..count].copy_from_slice(&self[start..start + count]);
        Ok(count)
    }
}

impl<T: ReadAt + ?Sized> ReadAt for &T {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        (**self).read_at(buf, offset)
    }
}

/// A [`Read`] + [`Seek`] cursor over a [`ReadAt`].
struct Cursor<'a, F: ?Sized> {
    input: &'a F,
    offset: u64,
}

impl<F: ReadAt + ?Sized> Read for Cursor<'_, F> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let read = self.input.read_at(buf, self.offset)?;
        self.offset += read as u64;
        Ok(read)
    }
}

impl<F: ?Sized> Seek for Cursor<'_, F> {
    fn seek(&mut self, position: SeekFrom) -> std::io::Result<u64> {
        let SeekFrom::Start(offset) = position else {
            return Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "only absolute seeks"));
        };
        self.offset = offset;
        Ok(offset)
    }
}

/// What a scanning thread does with the lines it accepts, block by block.
pub trait LineWork {
    /// What a line gives (stored with the line until the calling thread visits it).
    type Line: Send;
    /// What a block gives, after its lines.
    type Block: Send;

    /// One accepted line (its view has no line or `seq` yet: 0).
    fn line(&mut self, view: &TooltraceView<'_>) -> Self::Line;

    /// One record the calling thread's one-thread reader read: a line no block accepted (a
    /// record the scanner leaves to the full parse, or a line longer than a block reads on).
    /// It belongs to no block, so it must not count toward the result of the next block
    /// this thread scans: unlike [`LineWork::line`], it leaves the block's state alone.
    fn item(&mut self, view: &TooltraceView<'_>) -> Self::Line;

    /// Whether the visitor of a [`Batch::Records`] wants this line among
    /// [`Records::wanted`] (the lines it must see one by one even when the block's result
    /// stands for the rest). Asked right after [`LineWork::line`] for the same line.
    /// Every line by default.
    fn wanted(&self, _line: &Self::Line) -> bool {
        true
    }

    /// The end of a block: what stands for its lines. The reader passes it on (in a
    /// [`Batch::Records`]) only for a block of nothing but accepted records and blank lines.
    fn block(&mut self) -> Self::Block;
}

/// What [`for_each_batch_parallel`] visits.
#[derive(Debug)]
pub enum Batch<'a, L, B> {
    /// One item, as [`for_each_item_parallel`] visits it.
    Item(Result<TraceItem<'a>, TraceError>, Option<&'a L>),
    /// The records of one block: every line of it a record the scanner accepted (or blank).
    Records(Records<'a, L, B>),
}

/// The records of one block, in order, with what their thread made of them.
#[derive(Debug)]
pub struct Records<'a, L, B> {
    block: &'a B,
    text: &'a str,
    entries: &'a [Entry<L>],
    /// The entries [`LineWork::wanted`] picked, with their number among the records.
    wanted: &'a [(u32, u32)],
    /// The line of `entries[0]`.
    first_line: u64,
    /// The `seq` of the first record.
    first_seq: u64,
    records: usize,
}

impl<'a, L, B> Records<'a, L, B> {
    /// What the block's thread made of the block ([`LineWork::block`]).
    pub fn block(&self) -> &'a B {
        self.block
    }

    /// The number of records.
    pub fn len(&self) -> usize {
        self.records
    }

    /// True when the block has no record (only blank lines).
    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// The records in order.
    pub fn iter(&self) -> impl Iterator<Item = RecordRef<'a, L>> + 'a {
        let (text, first_line, first_seq) = (self.text, self.first_line, self.first_seq);
        let mut seq = first_seq;
        self.entries.iter().enumerate().filter_map(move |(idx, entry)| match &entry.kind {
            Kind::Record(record, data) => {
                let here = RecordRef { record, data, text, line: first_line + idx as u64, seq };
                seq += 1;
                Some(here)
            }
            _ => None,
        })
    }

    /// The last `n` records (all when there are fewer), in order, without walking the
    /// others.
    pub fn last(&self, n: usize) -> impl Iterator<Item = RecordRef<'a, L>> + 'a {
        let n = n.min(self.records);
        // The entry the last `n` records start at.
        let (mut from, mut found) = (self.entries.len(), 0);
        while found < n && from > 0 {
            from -= 1;
            found += usize::from(matches!(self.entries[from].kind, Kind::Record(..)));
        }
        let (text, first_line) = (self.text, self.first_line);
        let mut seq = self.first_seq + (self.records - n) as u64;
        self.entries[from..].iter().enumerate().filter_map(move |(idx, entry)| match &entry.kind {
            Kind::Record(record, data) => {
                let here = RecordRef { record, data, text, line: first_line + (from + idx) as u64, seq };
                seq += 1;
                Some(here)
            }
            _ => None,
        })
    }

    /// The records [`LineWork::wanted`] picked, in order (without walking the others).
    pub fn wanted(&self) -> impl Iterator<Item = RecordRef<'a, L>> + 'a {
        let (text, entries, first_line, first_seq) = (self.text, self.entries, self.first_line, self.first_seq);
        self.wanted.iter().filter_map(move |&(idx, k)| match &entries.get(idx as usize)?.kind {
            Kind::Record(record, data) => {
                Some(RecordRef { record, data, text, line: first_line + u64::from(idx), seq: first_seq + u64::from(k) })
            }
            _ => None,
        })
    }

    /// The `k`-th record (0-based).
    pub fn get(&self, k: usize) -> Option<RecordRef<'a, L>> {
        if self.records == self.entries.len() {
            let Kind::Record(record, data) = &self.entries.get(k)?.kind else { return None };
            let (line, seq) = (self.first_line + k as u64, self.first_seq + k as u64);
            return Some(RecordRef { record, data, text: self.text, line, seq });
        }
        self.iter().nth(k)
    }

    /// The number among the block's records (0-based) of `record`, one of them.
    pub fn ordinal(&self, record: &RecordRef<'a, L>) -> usize {
        record.seq.saturating_sub(self.first_seq) as usize
    }

    /// The line and `seq` of the `k`-th record.
    pub fn position(&self, k: usize) -> Option<(u64, u64)> {
        self.get(k).map(|record| (record.line, record.seq))
    }
}

/// One record of [`Records`].
#[derive(Debug)]
pub struct RecordRef<'a, L> {
    record: &'a Record,
    data: &'a L,
    text: &'a str,
    line: u64,
    seq: u64,
}

impl<'a, L> RecordRef<'a, L> {
    /// What the thread made of the line ([`LineWork::line`]).
    pub fn data(&self) -> &'a L {
        self.data
    }

    /// The record, as the one-thread reader would visit it.
    pub fn view(&self) -> Option<TooltraceView<'a>> {
        self.record.view(self.text, self.line, self.seq)
    }

    /// The 1-based line.
    pub fn line(&self) -> u64 {
        self.line
    }

    /// The event's sequence number.
    pub fn seq(&self) -> u64 {
        self.seq
    }
}

/// [`LineWork`] from a closure: no block results.
struct PerLine<P>(P);

impl<S: Send, P: FnMut(&TooltraceView<'_>) -> S> LineWork for PerLine<P> {
    type Line = S;
    type Block = ();

    fn line(&mut self, view: &TooltraceView<'_>) -> S {
        (self.0)(view)
    }

    fn item(&mut self, view: &TooltraceView<'_>) -> S {
        (self.0)(view)
    }

    fn block(&mut self) {}
}

/// Streams every item of a trace to `visit` in trace order, exactly like
/// [`TraceReader::for_each_item`] on the same input, with `workers` threads scanning lines:
/// the calling thread and `workers - 1` more.
///
/// Every thread gets its own `prepare` from `make_prepare` (so it can own caches, such as a
/// regex's); for each well-formed tooltrace line `prepare` runs on its view and `visit`
/// receives the result with the item (`Some`); events of the full adapter come with `None`.
/// With `workers == 0` nothing runs in parallel: this is then `for_each_item` with `prepare`
/// called in line.
pub fn for_each_item_parallel<F, S, M, P, V>(
    input: &F,
    format: Option<TraceFormat>,
    workers: usize,
    make_prepare: M,
    visit: V,
) where
    F: ReadAt + ?Sized,
    S: Send,
    M: Fn() -> P + Sync,
    P: FnMut(&TooltraceView<'_>) -> S,
    V: FnMut(Result<TraceItem<'_>, TraceError>, Option<&S>) -> ControlFlow<()>,
{
    run(input, format, workers, (BLOCK_BYTES, LINE_TAIL_BYTES), make_prepare, visit);
}

/// [`for_each_item_parallel`] for callers that can take a block of records at once: a block
/// whose lines are all records (or blank) comes as one [`Batch::Records`] with what its
/// thread's [`LineWork::block`] made of it; everything else comes item by item. Visiting the
/// records of every batch in order gives exactly the items of [`for_each_item_parallel`].
pub fn for_each_batch_parallel<F, W, M, V>(
    input: &F,
    format: Option<TraceFormat>,
    workers: usize,
    make_work: M,
    visit: V,
) where
    F: ReadAt + ?Sized,
    W: LineWork,
    M: Fn() -> W + Sync,
    V: FnMut(Batch<'_, W::Line, W::Block>) -> ControlFlow<()>,
{
    run_batches(input, format, workers, (BLOCK_BYTES, LINE_TAIL_BYTES), make_work, visit);
}

/// [`for_each_item_parallel`] with a given block size and line tail (tests use tiny ones);
/// batches of records are visited record by record.
pub(super) fn run<F, S, M, P, V>(
    input: &F,
    format: Option<TraceFormat>,
    workers: usize,
    sizes: (usize, usize),
    make_prepare: M,
    mut visit: V,
) where
    F: ReadAt + ?Sized,
    S: Send,
    M: Fn() -> P + Sync,
    P: FnMut(&TooltraceView<'_>) -> S,
    V: FnMut(Result<TraceItem<'_>, TraceError>, Option<&S>) -> ControlFlow<()>,
{
    let make_work = || PerLine(make_prepare());
    run_batches(input, format, workers, sizes, make_work, |batch| match batch {
        Batch::Item(item, data) => visit(item, data),
        Batch::Records(records) => {
            for record in records.iter() {
                if let Some(view) = record.view() {
                    visit(Ok(TraceItem::Tooltrace(view)), Some(record.data()))?;
                }
            }
            ControlFlow::Continue(())
        }
    });
}

/// [`for_each_batch_parallel`] with a given block size and line tail.
pub(super) fn run_batches<F, W, M, V>(
    input: &F,
    format: Option<TraceFormat>,
    workers: usize,
    (block_bytes, tail): (usize, usize),
    make_work: M,
    mut visit: V,
) where
    F: ReadAt + ?Sized,
    W: LineWork,
    M: Fn() -> W + Sync,
    V: FnMut(Batch<'_, W::Line, W::Block>) -> ControlFlow<()>,
{
    let mut work = make_work();
    let mut reader = TraceReader::new(BufReader::new(Cursor { input, offset: 0 }), format);
    let mut visit_item =
        |item: Result<TraceItem<'_>, TraceError>, data: Option<&W::Line>| visit(Batch::Item(item, data));
    // The first record tells the format; a trace of another format is read here alone.
    if let Queued::Stop = reader.drain_queued(&mut visit_item) {
        return;
    }
    // Lines a first document that did not parse gave back (see `read_document`) are read
    // before the blocks, which start after everything the reader took.
    while reader.holds_line() {
        if reader.step_line(&mut |view: &TooltraceView<'_>| work.item(view), &mut visit_item).is_break() {
            return;
        }
        if let Queued::Stop = reader.drain_queued(&mut visit_item) {
            return;
        }
    }
    if workers == 0 {
        reader.for_each_prepared(&mut |view: &TooltraceView<'_>| work.item(view), &mut visit_item);
        return;
    }
    let start = reader.consumed;
    let shared = Shared {
        gate: Mutex::new(Gate { next: 0, consumed: 0, stop: false }),
        opened: Condvar::new(),
        spare: (0..workers).map(|_| Mutex::new(Vec::new())).collect(),
        limit: (workers * IN_FLIGHT_PER_WORKER) as u64,
    };
    let blocks = Blocks { input, start, size: block_bytes.max(1) as u64, tail };
    let mut end = start;
    let finished = std::thread::scope(|scope| {
        let (sender, done) = mpsc::channel::<Option<Block<W::Line, W::Block>>>();
        // The calling thread scans blocks too: `workers - 1` more threads.
        for thread in 1..workers {
            let (shared, blocks, make_work, sender) = (&shared, &blocks, &make_work, sender.clone());
            scope.spawn(move || {
                // Should this thread panic, the calling thread stops waiting for its block.
                let _guard = PanicGuard { sender: sender.clone() };
                let mut work = make_work();
                let mut local = Local::default();
                while let Some(index) = shared.claim(true) {
                    let block = blocks.scan(shared, thread, index, &mut local, &mut work);
                    if sender.send(Some(block)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(sender);
        // The workers stop when this thread is done, also when the visitor panics (else
        // they would wait for room forever and the scope would never end).
        let _stop = StopOnDrop(&shared);
        let mut local = Local::default();
        let mut order = Reorder { blocks: Vec::new(), next: 0, aborted: false };
        loop {
            let ready = order.ready(&done);
            if order.aborted {
                break ControlFlow::Break(());
            }
            let block = match ready {
                Some(block) => block,
                None => match shared.claim(false) {
                    // Nothing is ready: scan the next block here.
                    Some(index) => {
                        order.blocks.push(Some(blocks.scan(&shared, 0, index, &mut local, &mut work)));
                        continue;
                    }
                    // Blocks in flight are the limit: wait for the one due.
                    None => match done.recv() {
                        Ok(Some(block)) => {
                            order.blocks.push(Some(block));
                            continue;
                        }
                        Ok(None) | Err(_) => break ControlFlow::Break(()),
                    },
                },
            };
            let flow = walk(&block, &mut reader, &mut end, &mut work, &mut visit);
            let (eof, failed) = (block.eof, block.error.is_some());
            shared.consumed(block);
            if flow.is_break() || failed {
                // The input ends at a read error: it is reported once.
                break ControlFlow::Break(());
            }
            if eof {
                break flow;
            }
        }
    });
    if finished.is_break() {
        return;
    }
    // Anything after the blocks (the file grew while it was read) is read here.
    if reader.reposition(end).is_err() {
        return;
    }
    let mut visit_item =
        |item: Result<TraceItem<'_>, TraceError>, data: Option<&W::Line>| visit(Batch::Item(item, data));
    reader.for_each_prepared(&mut |view: &TooltraceView<'_>| work.item(view), &mut visit_item);
}

/// Stops the workers when dropped.
struct StopOnDrop<'a, S, B>(&'a Shared<S, B>);

impl<S, B> Drop for StopOnDrop<'_, S, B> {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// Tells the calling thread that a worker stopped by panicking.
struct PanicGuard<S, B> {
    sender: mpsc::Sender<Option<Block<S, B>>>,
}

impl<S, B> Drop for PanicGuard<S, B> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let _ = self.sender.send(None);
        }
    }
}

/// How the input after the first record is cut into blocks.
struct Blocks<'a, F: ?Sized> {
    input: &'a F,
    /// Where the first block starts.
    start: u64,
    size: u64,
    /// How far past its end a block reads to finish its last line.
    tail: usize,
}

impl<F: ReadAt + ?Sized> Blocks<'_, F> {
    /// Reads and scans block `index` (on any thread).
    fn scan<W: LineWork>(
        &self,
        shared: &Shared<W::Line, W::Block>,
        thread: usize,
        index: u64,
        local: &mut Local<W::Line>,
        work: &mut W,
    ) -> Block<W::Line, W::Block> {
        let mut block = (shared.spare.get(thread)).and_then(|spare| spare.lock().ok()?.pop()).unwrap_or_default();
        block.index = index;
        block.thread = thread;
        let from = self.start + index * self.size;
        read_block(self.input, self.start, from, from + self.size, self.tail, &mut block);
        block.scan(local, work);
        block
    }
}

/// Visits the lines of one block in order (on the calling thread). `end` is where the lines
/// visited so far end; a line the reader already consumed (part of a multi-line record read
/// for an earlier line) is skipped. A block of records only, none of them consumed, goes in
/// one batch.
fn walk<R: BufRead + Seek, W: LineWork>(
    block: &Block<W::Line, W::Block>,
    reader: &mut TraceReader<R>,
    end: &mut u64,
    work: &mut W,
    visit: &mut impl FnMut(Batch<'_, W::Line, W::Block>) -> ControlFlow<()>,
) -> ControlFlow<()> {
    if let (Some(summary), Some(first)) = (&block.summary, block.entries.first())
        && block.offset + u64::from(first.start) >= *end
    {
        let records = Records {
            block: summary,
            text: block.data.text(),
            entries: &block.entries,
            wanted: &block.wanted,
            first_line: reader.line + 1,
            first_seq: reader.seq + 1,
            records: block.records,
        };
        reader.line += block.entries.len() as u64;
        reader.seq += block.records as u64;
        *end = block.lines_end();
        visit(Batch::Records(records))?;
    } else {
        let mut visit_item =
            |item: Result<TraceItem<'_>, TraceError>, data: Option<&W::Line>| visit(Batch::Item(item, data));
        let mut prepare = |view: &TooltraceView<'_>| work.item(view);
        for (idx, entry) in block.entries.iter().enumerate() {
            let offset = block.offset + u64::from(entry.start);
            if offset < *end {
                continue;
            }
            let next =
                block.entries.get(idx + 1).map_or(block.lines_end(), |next| block.offset + u64::from(next.start));
            match &entry.kind {
                Kind::Blank => {
                    reader.line += 1;
                    *end = next;
                }
                Kind::Record(record, data) => {
                    reader.line += 1;
                    reader.seq += 1;
                    *end = next;
                    if let Some(view) = record.view(block.data.text(), reader.line, reader.seq)
                        && visit_item(Ok(TraceItem::Tooltrace(view)), Some(data)).is_break()
                    {
                        return ControlFlow::Break(());
                    }
                }
                Kind::Other => {
                    if reader.consumed != offset && reader.reposition(offset).is_err() {
                        return ControlFlow::Break(());
                    }
                    // A document that stopped at the next record's line left that line read:
                    // the reader takes it (and any it holds in turn) before the walk resumes.
                    loop {
                        reader.step_line(&mut prepare, &mut visit_item)?;
                        if let Queued::Stop = reader.drain_queued(&mut visit_item) {
                            return ControlFlow::Break(());
                        }
                        if !reader.holds_line() {
                            break;
                        }
                    }
                    *end = reader.consumed;
                }
            }
        }
    }
    if let Some(error) = &block.error {
        let error = TraceError::unreadable(reader.line + 1, error);
        visit(Batch::Item(Err(error), None))?;
    }
    ControlFlow::Continue(())
}

/// State the threads share.
struct Shared<S, B> {
    gate: Mutex<Gate>,
    /// Signalled when a block is consumed or the reading stops.
    opened: Condvar,
    /// Consumed blocks, for their buffers.
    spare: Vec<Mutex<Vec<Block<S, B>>>>,
    /// Blocks allowed in flight.
    limit: u64,
}

struct Gate {
    /// The next block to claim.
    next: u64,
    /// Blocks the calling thread has consumed.
    consumed: u64,
    stop: bool,
}

impl<S, B> Shared<S, B> {
    /// The next block to read, once fewer than `limit` are in flight; `None` to stop, or
    /// (unless `wait`) when the limit is reached.
    fn claim(&self, wait: bool) -> Option<u64> {
        let mut gate = self.gate.lock().ok()?;
        loop {
            if gate.stop {
                return None;
            }
            if gate.next < gate.consumed + self.limit {
                gate.next += 1;
                return Some(gate.next - 1);
            }
            if !wait {
                return None;
            }
            gate = self.opened.wait(gate).ok()?;
        }
    }

    /// The calling thread is done with `block`.
    fn consumed(&self, block: Block<S, B>) {
        if let Ok(mut gate) = self.gate.lock() {
            gate.consumed += 1;
        }
        self.opened.notify_all();
        if let Some(spare) = self.spare.get(block.thread)
            && let Ok(mut spare) = spare.lock()
        {
            spare.push(block);
        }
    }

    /// No more blocks are wanted.
    fn stop(&self) {
        if let Ok(mut gate) = self.gate.lock() {
            gate.stop = true;
        }
        self.opened.notify_all();
    }
}

/// Blocks in input order (the threads finish them in any order).
struct Reorder<S, B> {
    blocks: Vec<Option<Block<S, B>>>,
    next: u64,
    /// A worker panicked.
    aborted: bool,
}

impl<S, B> Reorder<S, B> {
    /// The block due next, if it is done (taking in what the workers finished).
    fn ready(&mut self, done: &mpsc::Receiver<Option<Block<S, B>>>) -> Option<Block<S, B>> {
        loop {
            match done.try_recv() {
                Ok(Some(block)) => self.blocks.push(Some(block)),
                Ok(None) => self.aborted = true,
                Err(_) => break,
            }
        }
        let slot = self.blocks.iter_mut().find(|b| b.as_ref().is_some_and(|b| b.index == self.next))?;
        let block = slot.take()?;
        self.blocks.retain(Option::is_some);
        self.next += 1;
        Some(block)
    }
}

/// One block: its bytes and what the worker found in them.
struct Block<S, B> {
    index: u64,
    /// The thread that reads into this block's buffers (each reuses its own: their memory
    /// stays in its core's cache).
    thread: usize,
    /// Where `text` starts in the input.
    offset: u64,
    /// The bytes read.
    data: Data,
    /// The lines that start in this block.
    entries: Vec<Entry<S>>,
    /// The records the block's [`LineWork::wanted`] picked: their entry and their number.
    wanted: Vec<(u32, u32)>,
    /// The input ended within this block.
    eof: bool,
    /// Reading failed here (after the lines read before the failure).
    error: Option<std::io::Error>,
    /// Where the block's first line starts in `data` (`None`: no line starts in it).
    first: Option<usize>,
    /// Where a line too long for the block starts (it is not in `data`).
    cut: Option<usize>,
    /// What the scanning thread made of the block, when all its lines are records or blank.
    summary: Option<B>,
    /// The records among the entries.
    records: usize,
}

/// A block's bytes: text (the common case), or bytes that are not UTF-8 (no line of such a
/// block takes the fast path). The buffer starts with `pad` zero bytes that are not the
/// block's (see [`ALIGN`]).
struct Data {
    buffer: Buffer,
    pad: usize,
}

enum Buffer {
    Text(String),
    Bytes(Vec<u8>),
}

/// The read buffer holds the input's bytes at the same address modulo `ALIGN` as their
/// offset in the file. The kernel's copy out of the page cache runs about three times slower
/// when the buffer's address is 1 to 31 bytes past the source's modulo the page size
/// (measured on this AMD EPYC host: 256 KiB `pread`s of the benchmark's 156 MB trace took
/// 81-113 ms of CPU at those offsets, 27-30 ms at 0, 32, 63 or 2048). Where a block starts
/// depends on the trace's first line, so without this about one trace in 130 hit it.
const ALIGN: usize = 64;

impl Data {
    const EMPTY: Data = Data { buffer: Buffer::Text(String::new()), pad: 0 };

    fn bytes(&self) -> &[u8] {
        let bytes = match &self.buffer {
            Buffer::Text(text) => text.as_bytes(),
            Buffer::Bytes(bytes) => bytes,
        };
        bytes.get(self.pad..).unwrap_or_default()
    }

    fn into_buffer(self) -> Vec<u8> {
        match self.buffer {
            Buffer::Text(text) => text.into_bytes(),
            Buffer::Bytes(bytes) => bytes,
        }
    }

    /// The block's text (empty for bytes that are not UTF-8).
    fn text(&self) -> &str {
        match &self.buffer {
            // The pad is zero bytes: `pad` is a character boundary.
            Buffer::Text(text) => text.get(self.pad..).unwrap_or_default(),
            Buffer::Bytes(_) => "",
        }
    }

    fn is_text(&self) -> bool {
        matches!(self.buffer, Buffer::Text(_))
    }
}

impl<S, B> Block<S, B> {
    /// Where the last line of `entries` ends in the input.
    fn lines_end(&self) -> u64 {
        self.offset + self.data.bytes().len() as u64
    }
}

impl<S, B> Default for Block<S, B> {
    fn default() -> Self {
        Block {
            index: 0,
            thread: 0,
            offset: 0,
            data: Data::EMPTY,
            entries: Vec::new(),
            wanted: Vec::new(),
            eof: false,
            error: None,
            first: None,
            cut: None,
            summary: None,
            records: 0,
        }
    }
}

/// One line of a block.
#[derive(Debug)]
struct Entry<S> {
    /// Where it starts in the block's text.
    start: u32,
    kind: Kind<S>,
}

#[derive(Debug)]
enum Kind<S> {
    Record(Record, S),
    Blank,
    Other,
}

/// Reads the lines that start in `from..to` of the input (`base` is where the blocks begin)
/// into `block`.
fn read_block<F: ReadAt + ?Sized, S, B>(
    input: &F,
    base: u64,
    from: u64,
    to: u64,
    tail: usize,
    block: &mut Block<S, B>,
) {
    // The buffer keeps its old bytes (they are overwritten): no zeroing on reuse.
    let mut buffer = std::mem::replace(&mut block.data, Data::EMPTY).into_buffer();
    block.entries.clear();
    (block.eof, block.error, block.first, block.cut) = (false, None, None, None);
    // One byte before the block tells whether a line starts right at `from`.
    let read_from = if from == base { base } else { from - 1 };
    block.offset = read_from;
    let owned = (to - read_from) as usize;
    // The first read takes the start of the next block too, where the last line most
    // likely ends (one read instead of two); longer lines read on in growing steps.
    let tail = tail.max(1);
    let mut step = 4096.min(tail);
    // The bytes go at the input's alignment. The room is made first, so the buffer's address
    // is final for the reads (a longer last line may move it, which only slows those reads).
    buffer.reserve((ALIGN + owned + 4 * step).saturating_sub(buffer.len()));
    let pad = (read_from as usize).wrapping_sub(buffer.as_ptr() as usize) % ALIGN;
    if buffer.len() < pad {
        buffer.resize(pad, 0);
    }
    buffer[..pad].fill(0);
    let mut bytes = Padded { buffer, pad };
    let mut read = bytes.fill(input, 0, owned + step, read_from, block);
    let mut len = read;
    step = (step * 2).min(tail);
    let first = if from == base { Some(0) } else { memchr::memchr(b'\n', &bytes.get()[..len]).map(|nl| nl + 1) };
    // Only lines that start before `to` are this block's.
    block.first = first.filter(|&first| first < owned.min(len));
    if let Some(first) = block.first {
        // The last line ends at the first line feed from `to - 1` on (or at the end of the input).
        let mut search = (owned - 1).min(len);
        loop {
            if let Some(nl) = memchr::memchr(b'\n', &bytes.get()[search..len]) {
                len = search + nl + 1;
                break;
            }
            if block.error.is_some() {
                // Lines cut short by the failure are not read; the error is reported after
                // the lines before it.
                len = memchr::memrchr(b'\n', &bytes.get()[..len]).map_or(0, |nl| nl + 1);
                break;
            }
            if block.eof {
                break;
            }
            if len >= owned + tail {
                // A line too long for a block: the one-thread reader reads it.
                let last = memchr::memrchr(b'\n', &bytes.get()[first..owned - 1]).map_or(first, |nl| first + nl + 1);
                block.cut = Some(last);
                len = last;
                break;
            }
            search = len;
            read = bytes.fill(input, len, step, read_from + len as u64, block);
            len = read;
            step = (step * 2).min(tail);
        }
    } else {
        // No line starts here: the bytes read past the block are the next block's.
        len = len.min(owned);
    }
    // Bytes read past the block's lines start the next block's: the input goes on.
    if len < read {
        block.eof = false;
    }
    let Padded { mut buffer, pad } = bytes;
    buffer.truncate(pad + len);
    let buffer = match String::from_utf8(buffer) {
        Ok(text) => Buffer::Text(text),
        Err(error) => Buffer::Bytes(error.into_bytes()),
    };
    block.data = Data { buffer, pad };
}

/// A read buffer whose first `pad` bytes are not the block's.
struct Padded {
    buffer: Vec<u8>,
    pad: usize,
}

impl Padded {
    /// The block's bytes.
    fn get(&self) -> &[u8] {
        &self.buffer[self.pad..]
    }

    /// Reads up to `count` bytes from `offset` of the input into the block's bytes at `at`
    /// (growing the buffer as needed); returns where the bytes read end, and sets `eof` or
    /// `error`.
    fn fill<F: ReadAt + ?Sized, S, B>(
        &mut self,
        input: &F,
        at: usize,
        count: usize,
        offset: u64,
        block: &mut Block<S, B>,
    ) -> usize {
        fill(input, &mut self.buffer, self.pad + at, count, offset, block) - self.pad
    }
}

/// Reads up to `count` bytes from `offset` of the input into `bytes` at `at` (growing it as
/// needed); returns where the bytes read end, and sets `eof` or `error`.
fn fill<F: ReadAt + ?Sized, S, B>(
    input: &F,
    bytes: &mut Vec<u8>,
    at: usize,
    count: usize,
    offset: u64,
    block: &mut Block<S, B>,
) -> usize {
    if bytes.len() < at + count {
        bytes.resize(at + count, 0);
    }
    let mut filled = at;
    while filled < at + count {
        match input.read_at(&mut bytes[filled..at + count], offset + (filled - at) as u64) {
            Ok(0) => {
                block.eof = true;
                break;
            }
            Ok(read) => filled += read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => {
                // After some bytes, the caller goes on with them (and reads again if it needs
                // more, meeting the error then).
                if filled == at {
                    block.error = Some(error);
                }
                break;
            }
        }
    }
    filled
}

impl<S, B> Block<S, B> {
    /// Splits the block into lines and scans each (on a worker).
    fn scan<W: LineWork<Line = S, Block = B>>(&mut self, local: &mut Local<S>, work: &mut W) {
        let bytes = self.data.bytes();
        self.summary = None;
        self.records = 0;
        self.wanted.clear();
        let Some(first) = self.first else {
            return;
        };
        let mut start = first;
        let mut clean = self.cut.is_none() && self.error.is_none();
        if self.data.is_text() {
            let text = self.data.text();
            while start < bytes.len() {
                let (line, next) = scan_line(bytes, start, &mut local.layouts);
                let kind = match line {
                    Line::Record(record) => match record.view(text, 0, 0) {
                        Some(view) => {
                            let data = work.line(&view);
                            if work.wanted(&data) {
                                let idx = self.entries.len() + local.entries.len();
                                self.wanted.push((idx as u32, self.records as u32));
                            }
                            self.records += 1;
                            Kind::Record(record, data)
                        }
                        None => Kind::Other,
                    },
                    Line::Blank => Kind::Blank,
                    Line::Other => Kind::Other,
                };
                clean &= !matches!(kind, Kind::Other);
                local.entries.push(Entry { start: start as u32, kind });
                if local.entries.len() == LOCAL_ENTRIES {
                    self.entries.append(&mut local.entries);
                }
                start = next;
            }
            self.entries.append(&mut local.entries);
        } else {
            // Not UTF-8: the one-thread reader reads every line (and reports the bad ones).
            clean = false;
            while start < bytes.len() {
                self.entries.push(Entry { start: start as u32, kind: Kind::Other });
                start = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |nl| start + nl + 1);
            }
        }
        if let Some(cut) = self.cut {
            // The rest of a line too long for a block.
            self.entries.push(Entry { start: cut as u32, kind: Kind::Other });
        }
        let summary = work.block();
        if clean && !self.entries.is_empty() {
            self.summary = Some(summary);
        }
    }
}

/// What one thread keeps for itself while it scans blocks.
struct Local<S> {
    layouts: Layouts,
    /// Lines scanned, moved to their block in batches: a block's entries are read by the
    /// calling thread, so writing them one by one into memory another core has read stalls
    /// on every cache line; one bulk copy does not.
    entries: Vec<Entry<S>>,
}

impl<S> Default for Local<S> {
    fn default() -> Self {
        Local { layouts: Layouts::default(), entries: Vec::with_capacity(LOCAL_ENTRIES) }
    }
}

/// The lines a thread scans before it moves them to their block.
const LOCAL_ENTRIES: usize = 256;
