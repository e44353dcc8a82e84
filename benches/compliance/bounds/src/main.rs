//! Lower bounds under `agentic check` on a trace: blocks read with `pread` by N threads (the
//! way the trace reader reads), then one simple pass over every block.
//!
//! Modes: `read` (nothing but the reads), `nl` (count line feeds with `memchr`), `utf8`
//! (`str::from_utf8`), `stage1` (the first stage of a structural JSON scan: per 64 bytes the
//! bit masks of quotes, backslashes and control bytes, and the in-string mask by a prefix XOR
//! of the quotes). `BLOCK_KB` sets the block size (default 256), `ROT` how many buffers each
//! thread cycles through (default 1).

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

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|text| text.parse().ok()).unwrap_or(default)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(mode), Some(path)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: compliance-bounds read|nl|utf8|stage1 TRACE [THREADS]");
        return ExitCode::from(2);
    };
    if !matches!(mode.as_str(), "read" | "nl" | "utf8" | "stage1") {
        eprintln!("error: unknown mode `{mode}` (read, nl, utf8 or stage1)");
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
