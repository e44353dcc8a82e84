//! Lower bounds under `agentic check` on a trace: blocks read with `pread` by N threads (the
//! way the trace reader reads), then one simple pass over every block.
//!
//! Modes: `read` (nothing but the reads), `nl` (count line feeds with `memchr`), `utf8`
//! (`str::from_utf8`), `stage1` (the first stage of a structural JSON scan: per 64 bytes the
//! bit masks of quotes, backslashes and control bytes, and the in-string mask by a prefix XOR
//! of the quotes), `twostage` (a prototype of a simdjson-style two-stage reader for the
//! benchmark's tooltrace lines: stage 1 writes the positions of quotes, structural
//! characters and line feeds outside strings, stage 2 walks them per line and takes the
//! fields out; see [`twostage`] for what it leaves out; `DEBUG=1` prints per block how many
//! lines it read and refused). `BLOCK_KB` sets the block size (default 256), `ROT` how many
//! buffers each thread cycles through (default 1).

use std::os::unix::fs::FileExt;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// The stage-1 masks of `block`, folded into a number so the work is not optimised away.
fn stage1(block: &[u8]) -> u64 {
    let mut folded = 0u64;
    let mut inside = 0u64;
    for chunk in block.chunks_exact(64) {
        let (mut quotes, mut backslashes, mut controls) = (0u64, 0u64, 0u64);
        for (lane, bytes) in chunk.chunks_exact(16).enumerate() {
            let Ok(bytes) = <[u8; 16]>::try_from(bytes) else { continue };
            let v = wide::u8x16::new(bytes);
            let shift = 16 * lane;
            quotes |= u64::from(v.simd_eq(wide::u8x16::splat(b'"')).to_bitmask()) << shift;
            backslashes |= u64::from(v.simd_eq(wide::u8x16::splat(b'\\')).to_bitmask()) << shift;
            controls |= u64::from(v.min(wide::u8x16::splat(0x1f)).simd_eq(v).to_bitmask()) << shift;
        }
        let mut strings = quotes;
        for step in [1, 2, 4, 8, 16, 32] {
            strings ^= strings << step;
        }
        strings ^= inside;
        inside = ((strings as i64) >> 63) as u64;
        folded = folded.wrapping_add(u64::from((strings & controls).count_ones() + backslashes.count_ones()));
    }
    folded
}

/// The masks of 64 bytes: quotes, backslashes, control bytes (line feeds among them), line
/// feeds, structural characters (`{}[]:,`) and blanks (space, tab, carriage return).
#[inline(always)]
fn masks(chunk: &[u8; 64]) -> [u64; 6] {
    let mut out = [0u64; 6];
    for lane in 0..4 {
        let Ok(bytes) = <[u8; 16]>::try_from(&chunk[16 * lane..16 * lane + 16]) else { continue };
        let v = wide::u8x16::new(bytes);
        let eq = |byte: u8| v.simd_eq(wide::u8x16::splat(byte));
        let bits = |m: wide::u8x16| u64::from(m.to_bitmask()) << (16 * lane);
        out[0] |= bits(eq(b'"'));
        out[1] |= bits(eq(b'\\'));
        out[2] |= bits(v.min(wide::u8x16::splat(0x1f)).simd_eq(v));
        out[3] |= bits(eq(b'\n'));
        out[4] |= bits(eq(b'{') | eq(b'}') | eq(b'[') | eq(b']') | eq(b':') | eq(b','));
        out[5] |= bits(eq(b' ') | eq(b'\t') | eq(b'\r'));
    }
    out
}

/// The bytes of a 64-byte chunk that a backslash escapes (the byte after an odd run of
/// backslashes), given its backslash mask; `carry` is 1 when the previous chunk ended in an
/// escaping backslash, and is updated for the next chunk. The run-parity trick of simdjson:
/// runs that start on even and odd bits are told apart by one addition.
fn escaped(backslashes: u64, carry: &mut u64) -> u64 {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    // A backslash escaped by the previous chunk's last one starts no run.
    let backslashes = backslashes & !*carry;
    let follows = (backslashes << 1) | *carry;
    let odd_starts = backslashes & !EVEN & !follows;
    let (even_runs, overflow) = odd_starts.overflowing_add(backslashes);
    *carry = u64::from(overflow);
    let invert = even_runs << 1;
    (EVEN ^ invert) & follows
}

/// A prototype of a two-stage reader for tooltrace lines, to bound what a rewrite of the
/// scanner could reach. Stage 1: per 64 bytes the masks above, the quotes a backslash escapes
/// taken out (see [`escaped`]), the in-string mask by a prefix XOR of the quotes, and the
/// positions of every quote, structural character and line feed outside strings into
/// `index`. Stage 2: per line, walks the index: `{`, then members (`"key"`, `:`, a string or
/// a flat object of strings, `,` or `}`), then the line feed; keys are told by their first
/// eight bytes, and the fields the reader keeps (tool name, span, parent, args) go to `out`
/// as ranges. Checked: a control byte inside a string and a byte outside strings that is
/// neither blank, structural nor a quote (both written to the index, where stage 2 refuses
/// their line), and the order of the index. Not done: the letters of escapes; numbers,
/// literals and nesting (a line with them is counted as left to the full scanner); the
/// timestamp's check, the UTF-8 check and repeated keys.
fn twostage(block: &[u8], index: &mut Vec<u32>, out: &mut Vec<[u32; 8]>) -> u64 {
    index.clear();
    out.clear();
    let mut inside = 0u64;
    let mut escape_carry = 0u64;
    let mut refused = 0u64;
    let chunks = block.len().div_ceil(64);
    for c in 0..chunks {
        let base = 64 * c;
        let mut pad = [b' '; 64];
        let chunk: &[u8; 64] = match block.get(base..base + 64).and_then(|full| <&[u8; 64]>::try_from(full).ok()) {
            Some(full) => full,
            None => {
                pad[..block.len() - base].copy_from_slice(&block[base..]);
                &pad
            }
        };
        let [quotes, backslashes, controls, newlines, structurals, blanks] = masks(chunk);
        let quotes = quotes & !escaped(backslashes, &mut escape_carry);
        let mut strings = quotes;
        for step in [1, 2, 4, 8, 16, 32] {
            strings ^= strings << step;
        }
        strings ^= inside;
        inside = ((strings as i64) >> 63) as u64;
        // `strings` holds opening quotes and string contents; closing quotes are outside.
        let outside = !strings & !quotes;
        let bad = (strings & controls & !quotes) | (outside & !(structurals | blanks | newlines));
        // A bad byte's position goes to the index too: stage 2 finds it where it expects a
        // quote or a structural character, and refuses that line.
        let mut wanted = quotes | (outside & (structurals | newlines)) | bad;
        while wanted != 0 {
            index.push((base + wanted.trailing_zeros() as usize) as u32);
            wanted &= wanted - 1;
        }
    }
    // Keys by their first eight bytes (`args"` zero-padded, compared under a mask).
    const TOOL_NAME: u64 = u64::from_le_bytes(*b"tool_nam");
    const TRACE_ID: u64 = u64::from_le_bytes(*b"trace_id");
    const PARENT: u64 = u64::from_le_bytes(*b"parent_t");
    const ARGS: u64 = u64::from_le_bytes(*b"args\"\0\0\0");
    let n = index.len();
    let at = |k: usize| -> u8 { index.get(k).and_then(|&p| block.get(p as usize)).copied().unwrap_or(0) };
    let line = |i: usize, fields: &mut [u32; 8]| -> Option<usize> {
        let mut k = i;
        if at(k) != b'{' {
            return None;
        }
        k += 1;
        loop {
            if at(k) != b'"' || at(k + 1) != b'"' || at(k + 2) != b':' {
                return None;
            }
            let key = index[k] as usize + 1;
            let first = block.get(key..key + 8).map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])));
            let slot = match first {
                TOOL_NAME => 0,
                TRACE_ID => 2,
                PARENT => 4,
                _ if first & 0xff_ffff_ffff == ARGS => 6,
                _ => 8,
            };
            k += 3;
            match at(k) {
                b'"' => {
                    if at(k + 1) != b'"' {
                        return None;
                    }
                    if slot < 8 {
                        fields[slot] = index[k] + 1;
                        fields[slot + 1] = index[k + 1];
                    }
                    k += 2;
                }
                b'{' => {
                    let open = index[k];
                    k += 1;
                    if at(k) != b'}' {
                        loop {
                            if at(k) != b'"'
                                || at(k + 1) != b'"'
                                || at(k + 2) != b':'
                                || at(k + 3) != b'"'
                                || at(k + 4) != b'"'
                            {
                                return None;
                            }
                            k += 5;
                            match at(k) {
                                b',' => k += 1,
                                b'}' => break,
                                _ => return None,
                            }
                        }
                    }
                    if slot < 8 {
                        fields[slot] = open;
                        fields[slot + 1] = index[k] + 1;
                    }
                    k += 1;
                }
                _ => return None,
            }
            match at(k) {
                b',' => k += 1,
                b'}' => {
                    k += 1;
                    break;
                }
                _ => return None,
            }
        }
        (at(k) == b'\n').then_some(k + 1)
    };
    let mut i = 0usize;
    while i < n {
        let mut fields = [u32::MAX; 8];
        match line(i, &mut fields) {
            Some(next) => {
                out.push(fields);
                i = next;
            }
            None => {
                // Left to the full scanner: on to the next line feed outside strings.
                refused += 1;
                while i < n {
                    i += 1;
                    if index.get(i - 1).is_some_and(|&p| block.get(p as usize) == Some(&b'\n')) {
                        break;
                    }
                }
            }
        }
    }
    let _ = out.iter().map(|f| u64::from(f[1].wrapping_sub(f[0]))).sum::<u64>();
    out.len() as u64 + (refused << 32)
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|text| text.parse().ok()).unwrap_or(default)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(mode), Some(path)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: compliance-bounds read|nl|utf8|stage1|twostage TRACE [THREADS]");
        return ExitCode::from(2);
    };
    if !matches!(mode.as_str(), "read" | "nl" | "utf8" | "stage1" | "twostage") {
        eprintln!("error: unknown mode `{mode}` (read, nl, utf8, stage1 or twostage)");
        return ExitCode::from(2);
    }
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(error) => {
            eprintln!("error: cannot open `{path}`: {error}");
            return ExitCode::from(2);
        }
    };
    let threads = args.get(3).and_then(|text| text.parse().ok()).unwrap_or(2usize).max(1);
    let block = env_number("BLOCK_KB", 256).max(1) * 1024;
    let rotate = env_number("ROT", 1).max(1);
    let next = AtomicUsize::new(0);
    let total = AtomicU64::new(0);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let mut buffers = vec![vec![0u8; block]; rotate];
                let (mut index, mut out) = (Vec::new(), Vec::new());
                let mut local = 0u64;
                for turn in 0.. {
                    let offset = next.fetch_add(1, Ordering::Relaxed) as u64 * block as u64;
                    let buffer = &mut buffers[turn % rotate];
                    let count = match file.read_at(buffer, offset) {
                        Ok(0) | Err(_) => break,
                        Ok(count) => count,
                    };
                    let bytes = &buffer[..count];
                    local = local.wrapping_add(match mode.as_str() {
                        "nl" => memchr::memchr_iter(b'\n', bytes).count() as u64,
                        "utf8" => std::str::from_utf8(bytes).map_or(0, str::len) as u64,
                        "stage1" => stage1(bytes),
                        "twostage" => {
                            // Whole lines only (the reader's blocks own the lines that start in them).
                            let from = memchr::memchr(b'\n', bytes).map_or(0, |nl| nl + 1);
                            let to = memchr::memrchr(b'\n', bytes).map_or(0, |nl| nl + 1).max(from);
                            let folded = twostage(&bytes[from..to], &mut index, &mut out);
                            if std::env::var_os("DEBUG").is_some() {
                                eprintln!("lines {} refused {}", folded & 0xffff_ffff, folded >> 32);
                            }
                            folded
                        }
                        _ => u64::from(bytes[0]),
                    });
                }
                total.fetch_add(local, Ordering::Relaxed);
            });
        }
    });
    println!("{}", total.load(Ordering::Relaxed));
    ExitCode::SUCCESS
}
