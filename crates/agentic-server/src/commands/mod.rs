//! One module per CLI command; each exposes an `Args` struct and a `run` function that
//! returns the process exit code.

pub(crate) mod check;
pub(crate) mod compare;
pub(crate) mod evaluation;
pub(crate) mod evidence;
pub(crate) mod judge;
pub(crate) mod lint;
pub(crate) mod promote;
pub(crate) mod run;
pub(crate) mod score;

use std::path::{Path, PathBuf};

/// Why a file that should be UTF-8 text is not: UTF-16, with how to convert it, or the line
/// and column of the first byte that is not UTF-8, with how to fix it.
pub(crate) fn not_utf8(error: &std::string::FromUtf8Error) -> String {
    let bytes = error.as_bytes();
    if agentic_core::document::looks_utf16(bytes) {
        return "is UTF-16 text, and it must be UTF-8; convert it (`iconv -f UTF-16 -t UTF-8 FILE > FILE.utf8`)"
            .to_owned();
    }
    let at = error.utf8_error().valid_up_to();
    let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = bytes[..at].iter().rposition(|&b| b == b'\n').map_or(0, |nl| nl + 1);
    // Columns count characters, as editors show them.
    let column = String::from_utf8_lossy(&bytes[line_start..at]).chars().count() + 1;
    format!(
        "is not UTF-8 text: line {line}, column {column} has the byte 0x{:02X}; save the file as UTF-8 (for Latin-1 \
         text: `iconv -f LATIN1 -t UTF-8 FILE > FILE.utf8`)",
        bytes[at]
    )
}

/// Writes `bytes` to the file at `path` so that a failed write (a full disk, a closed
/// device) never leaves it half-written: a regular file (or a new one) is replaced whole by
/// renaming a complete copy written beside it, keeping the old file's permissions; a symbolic
/// link is followed to the file it names. A device or a pipe (`/dev/null`, a FIFO) is written
/// directly, since renaming over it would replace it.
pub(crate) fn write_file_whole(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let target = match std::fs::symlink_metadata(path) {
        // A link whose target does not exist yet is followed too: the write creates it.
        Ok(metadata) if metadata.file_type().is_symlink() => where_written(path).ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::NotFound, "the symbolic link's target directory does not exist")
        })?,
        _ => path.to_owned(),
    };
    let existing = std::fs::metadata(&target).ok();
    if existing.as_ref().is_some_and(|metadata| !metadata.is_file()) {
        return std::fs::write(&target, bytes);
    }
    let name = target.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let temporary = target.with_file_name(format!(".{name}.{}.partial", std::process::id()));
    let written = (|| {
        // Errors name the step and the file beside the target: an error on the target itself
        // would point at a file that may well exist.
        let beside = |step: &str, error: std::io::Error| {
            std::io::Error::new(
                error.kind(),
                format!(
                    "{step} `{}`, the complete copy written beside the target and then renamed over it: {error}",
                    temporary.display()
                ),
            )
        };
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary)
            .map_err(|error| beside("cannot create", error))?;
        if let Some(metadata) = &existing {
            file.set_permissions(metadata.permissions())?;
        }
        file.write_all(bytes).map_err(|error| beside("cannot write", error))?;
        file.sync_all().map_err(|error| beside("cannot write", error))?;
        std::fs::rename(&temporary, &target).map_err(|error| beside("cannot rename", error))
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

/// Writes an output file the user named (`--json`, `--markdown`, `--out`) whole or not at
/// all ([`write_file_whole`]), with an error that says what was kept and what to do.
pub(crate) fn write_output(path: &str, bytes: &[u8]) -> anyhow::Result<()> {
    use anyhow::Context as _;
    write_file_whole(Path::new(path), bytes).with_context(|| {
        format!(
            "cannot write `{path}` (a file already there is left as it was); give a path in a directory you can \
             create files in, on a disk with free space"
        )
    })
}

/// The file a write to `path` creates or replaces: its canonical path, following a symbolic
/// link whose target does not exist yet (writing through it creates the target).
pub(crate) fn where_written(path: &Path) -> Option<PathBuf> {
    let mut path = path.to_path_buf();
    // As many links as the kernel follows (`ELOOP` beyond).
    for _ in 0..40 {
        if let Ok(real) = std::fs::canonicalize(&path) {
            return Some(real);
        }
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf();
        match std::fs::read_link(&path) {
            Ok(target) => path = parent.join(target),
            Err(_) => return Some(std::fs::canonicalize(parent).ok()?.join(path.file_name()?)),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::write_file_whole;

    /// A file that is not UTF-8 is described by where it goes wrong, or as UTF-16.
    #[test]
    fn not_utf8_names_the_line_and_column_or_utf16() {
        let describe = |bytes: &[u8]| super::not_utf8(&String::from_utf8(bytes.to_vec()).unwrap_err());
        let latin1 = describe(b"a: 1\nname: caf\xe9\n");
        assert!(latin1.contains("line 2, column 10 has the byte 0xE9"), "{latin1}");
        // Columns count characters, not bytes.
        let after_unicode =
            describe("\u{e9}\u{e9}".as_bytes().iter().copied().chain([0xff]).collect::<Vec<u8>>().as_slice());
        assert!(after_unicode.contains("line 1, column 3 "), "{after_unicode}");
        assert!(describe(b"\xff\xfea\x00").contains("UTF-16"));
    }

    #[test]
    fn files_are_replaced_whole_links_followed_and_devices_written_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let report = dir.path().join("report.json");
        write_file_whole(&report, b"one").unwrap();
        assert_eq!(std::fs::read(&report).unwrap(), b"one");
        std::fs::set_permissions(&report, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_file_whole(&report, b"two").unwrap();
        assert_eq!(std::fs::read(&report).unwrap(), b"two");
        assert_eq!(std::fs::metadata(&report).unwrap().permissions().mode() & 0o777, 0o640);
        // Through a link: the file it names changes, the link stays a link.
        let link = dir.path().join("latest.json");
        std::os::unix::fs::symlink(&report, &link).unwrap();
        write_file_whole(&link, b"three").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(&report).unwrap(), b"three");
        // A link whose target does not exist yet creates it, as the shell's `>` does.
        let dangling = dir.path().join("next.json");
        std::os::unix::fs::symlink("created.json", &dangling).unwrap();
        write_file_whole(&dangling, b"four").unwrap();
        assert_eq!(std::fs::read(dir.path().join("created.json")).unwrap(), b"four");
        assert!(std::fs::symlink_metadata(&dangling).unwrap().file_type().is_symlink());
        // A device is written, not replaced.
        write_file_whole(std::path::Path::new("/dev/null"), b"gone").unwrap();
        assert!(!std::fs::metadata("/dev/null").unwrap().is_file());
        // A write that fails leaves no partial copy behind.
        assert!(write_file_whole(&dir.path().join("missing/report.json"), b"x").is_err());
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 4, "{names:?}");
        // A target that exists where no file can be created (`/proc`): the error names the
        // copy beside it, not the target, which exists.
        let error = write_file_whole(std::path::Path::new("/proc/version"), b"x").unwrap_err().to_string();
        assert!(error.starts_with("cannot create `/proc/.version."), "{error}");
    }
}
