//! Opening a trace file by its content: a plain file is read in place (the parallel reader
//! reads it at offsets), a gzip-compressed one is decompressed as a stream, and a compressed
//! format agentic does not read is refused with what to do.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

/// A trace ready to read.
pub enum TraceInput {
    /// A plain file, at its start.
    File(File),
    /// A stream read once from front to back (a decompressed file, standard input).
    Stream(Box<dyn BufRead + Send>),
}

impl std::fmt::Debug for TraceInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TraceInput::File(file) => f.debug_tuple("File").field(file).finish(),
            TraceInput::Stream(_) => f.write_str("Stream(..)"),
        }
    }
}

/// The stream buffer of a decompressed trace.
const STREAM_BUFFER: usize = 256 * 1024;

impl TraceInput {
    /// Opens `path`, looking at its first bytes: gzip (`1f 8b`, also several concatenated
    /// members, as `cat a.gz b.gz` makes) is decompressed; zstd, xz and bzip2 are refused
    /// with a hint; anything else is a plain file. A path that is not a regular file (a named
    /// pipe, `<(...)`, `/dev/stdin`) is read as a stream.
    pub fn open(path: &Path) -> std::io::Result<TraceInput> {
        let mut file = File::open(path)?;
        if !file.metadata()?.is_file() {
            return TraceInput::stream(file);
        }
        let mut magic = [0u8; 6];
        let mut filled = 0;
        while filled < magic.len() {
            match file.read(&mut magic[filled..])? {
                0 => break,
                count => filled += count,
            }
        }
        file.seek(SeekFrom::Start(0))?;
        Ok(if gzip(&magic[..filled])? {
            TraceInput::Stream(Box::new(BufReader::with_capacity(
                STREAM_BUFFER,
                GzipMembers::new(BufReader::with_capacity(STREAM_BUFFER, file)),
            )))
        } else {
            TraceInput::File(file)
        })
    }

    /// A trace read front to back (standard input, a pipe), told apart by its first bytes
    /// like [`TraceInput::open`].
    pub fn stream(reader: impl Read + Send + 'static) -> std::io::Result<TraceInput> {
        let mut reader = BufReader::with_capacity(STREAM_BUFFER, reader);
        Ok(if gzip(reader.fill_buf()?)? {
            TraceInput::Stream(Box::new(BufReader::with_capacity(STREAM_BUFFER, GzipMembers::new(reader))))
        } else {
            TraceInput::Stream(Box::new(reader))
        })
    }
}

/// The text of a gzip file: its members one after another (as `cat a.gz b.gz` makes), and
/// like `gzip -d`, zero bytes after the last member are padding (tape and block devices, and
/// `tar`, pad files so), not a broken member. Anything else after a member must be another
/// member; zeros followed by other bytes are an error.
struct GzipMembers<R> {
    /// The member being read (`None` after the end).
    member: Option<flate2::bufread::GzDecoder<R>>,
}

impl<R: BufRead> GzipMembers<R> {
    fn new(reader: R) -> GzipMembers<R> {
        GzipMembers { member: Some(flate2::bufread::GzDecoder::new(reader)) }
    }
}

impl<R: BufRead> Read for GzipMembers<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let Some(member) = self.member.as_mut() else { return Ok(0) };
            let read = member.read(buf)?;
            if read > 0 || buf.is_empty() {
                return Ok(read);
            }
            // The member ended: what follows it?
            let compressed = member.get_mut();
            match compressed.fill_buf()?.first() {
                None => {
                    self.member = None;
                    return Ok(0);
                }
                Some(0) => loop {
                    let data = compressed.fill_buf()?;
                    if data.is_empty() {
                        self.member = None;
                        return Ok(0);
                    }
                    if data.iter().any(|&byte| byte != 0) {
                        return Err(std::io::Error::new(
                            std::io::ErrorKind::InvalidData,
                            "the gzip data is followed by zero bytes and then other bytes; the file is damaged \
                             (`gzip -t FILE` tests it)",
                        ));
                    }
                    let count = data.len();
                    compressed.consume(count);
                },
                Some(_) => {
                    let Some(ended) = self.member.take() else { return Ok(0) };
                    self.member = Some(flate2::bufread::GzDecoder::new(ended.into_inner()));
                }
            }
        }
    }
}

/// Whether a trace starting with `magic` is gzip-compressed; an error for the compressed
/// formats agentic does not read, saying how to decompress them, and for UTF-16 text
/// (PowerShell's `>` writes it), saying how to convert it.
fn gzip(magic: &[u8]) -> std::io::Result<bool> {
    let refuse = |name: &str, command: &str| {
        Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("the trace is {name}-compressed; decompress it first (`{command}`) or compress it with gzip"),
        ))
    };
    match magic {
        [0x1f, 0x8b, ..] => Ok(true),
        [0x28, 0xb5, 0x2f, 0xfd, ..] => refuse("zstd", "zstd -d FILE"),
        [0xfd, b'7', b'z', b'X', b'Z', 0x00, ..] => refuse("xz", "xz -d FILE"),
        [b'B', b'Z', b'h', ..] => refuse("bzip2", "bzip2 -d FILE"),
        _ if agentic_core::document::looks_utf16(magic) => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "the trace is UTF-16 text (as PowerShell's `>` writes it), and traces are UTF-8; convert it first \
                 (`iconv -f UTF-16 -t UTF-8 FILE > FILE.utf8`, or in PowerShell `Get-Content FILE | Out-File -Encoding \
                 utf8 OUT`)",
        )),
        _ => Ok(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn read_all(input: TraceInput) -> String {
        let mut text = String::new();
        match input {
            TraceInput::File(mut file) => file.read_to_string(&mut text).unwrap(),
            TraceInput::Stream(mut stream) => stream.read_to_string(&mut text).unwrap(),
        };
        text
    }

    #[test]
    fn plain_and_gzip_files_read_the_same_and_other_compressions_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let text = "{\"tool_name\":\"Read\"}\n{\"tool_name\":\"Bash\"}\n";
        let plain = dir.path().join("t.jsonl");
        std::fs::write(&plain, text).unwrap();
        assert!(matches!(TraceInput::open(&plain).unwrap(), TraceInput::File(_)));
        assert_eq!(read_all(TraceInput::open(&plain).unwrap()), text);

        // Two gzip members back to back read as one text.
        let mut gz = Vec::new();
        for part in text.split_inclusive('\n') {
            let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            encoder.write_all(part.as_bytes()).unwrap();
            gz.extend(encoder.finish().unwrap());
        }
        let compressed = dir.path().join("t.jsonl.gz");
        std::fs::write(&compressed, &gz).unwrap();
        assert!(matches!(TraceInput::open(&compressed).unwrap(), TraceInput::Stream(_)));
        assert_eq!(read_all(TraceInput::open(&compressed).unwrap()), text);

        let zstd = dir.path().join("t.jsonl.zst");
        std::fs::write(&zstd, [0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0]).unwrap();
        let error = TraceInput::open(&zstd).unwrap_err();
        assert!(error.to_string().contains("zstd -d"), "{error}");

        // A stream is told apart the same way.
        let stream = |bytes: Vec<u8>| TraceInput::stream(std::io::Cursor::new(bytes));
        assert_eq!(read_all(stream(gz.clone()).unwrap()), text);
        assert_eq!(read_all(stream(text.as_bytes().to_vec()).unwrap()), text);
        assert!(stream(vec![0x28, 0xb5, 0x2f, 0xfd, 0]).unwrap_err().to_string().contains("zstd -d"));

        // UTF-16, with or without a byte order mark, either byte order.
        for bytes in [
            vec![0xff, 0xfe, b'{', 0, b'"', 0],
            vec![0xfe, 0xff, 0, b'{', 0, b'"'],
            vec![b'{', 0, b'"', 0, b't', 0],
            vec![0, b'[', 0, b'{', 0, b'"'],
        ] {
            let error = stream(bytes.clone()).unwrap_err().to_string();
            assert!(error.contains("UTF-16") && error.contains("iconv -f UTF-16 -t UTF-8"), "{bytes:?}: {error}");
        }

        // Zeros after the last member (a padded file) end it, as `gzip -d` reads it; zeros
        // between members are still an error.
        let mut padded = gz.clone();
        padded.extend(vec![0u8; 600_000]);
        std::fs::write(&compressed, &padded).unwrap();
        assert_eq!(read_all(TraceInput::open(&compressed).unwrap()), text);
        assert_eq!(read_all(stream(padded).unwrap()), text);
        let mut inner = Vec::new();
        let mut members = text.split_inclusive('\n').map(|part| {
            let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            encoder.write_all(part.as_bytes()).unwrap();
            encoder.finish().unwrap()
        });
        inner.extend(members.next().unwrap());
        inner.extend([0u8; 5]);
        inner.extend(members.next().unwrap());
        let TraceInput::Stream(mut broken) = stream(inner).unwrap() else { panic!("a stream") };
        let error = broken.read_to_string(&mut String::new()).unwrap_err();
        assert!(error.to_string().contains("followed by zero bytes and then other bytes"), "{error}");

        let empty = dir.path().join("empty.jsonl");
        std::fs::write(&empty, "").unwrap();
        assert_eq!(read_all(TraceInput::open(&empty).unwrap()), "");
    }
}
