//! A regular file mapped read-only and read in place, guarded against the file shrinking
//! under the reader: the one mapping of inputs that every reader of the workspace uses (the
//! trace reader here, grtimport's trace.dat and Perfetto inputs).
//!
//! Reading a page of a shared file mapping past the file's current end raises `SIGBUS`,
//! which kills the process with no message. A [`MappedFile`] registers its range with a
//! `SIGBUS` handler that replaces such a page with a page of zeros instead, so the reader
//! sees zeros there (damage it reports), and [`MappedFile::shrunk`] then says where the
//! file's data ended, for one line naming the file and the byte.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use memmap2::{Mmap, UncheckedAdvice};

use crate::sigbus::Registration;

/// A file mapped read-only and shared, its range guarded against `SIGBUS` (see the module
/// docs). Dereferences to its bytes.
pub struct MappedFile {
    /// Declared before `map`: unregistered before the mapping goes.
    guard: Registration,
    map: Mmap,
    path: PathBuf,
    /// The file mapped, for its length now: the path may name another file by then (a
    /// recorder that started again under the same name).
    file: File,
}

/// How a [`MappedFile`] shrank under its reader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shrunk {
    /// Where its data now ends: the file's length now, or the first page that faulted.
    pub end: u64,
    /// The file's length now (None if it cannot be read any more).
    pub now: Option<u64>,
}

impl MappedFile {
    /// Maps `file`, opened from `path` (the name its errors give).
    /// `Ok(None)` when it cannot be guarded (an empty file, or every guard slot taken): the
    /// caller then reads it with read(2) instead, so that no unguarded mapping exists.
    pub fn map(file: &File, path: impl AsRef<Path>) -> io::Result<Option<MappedFile>> {
        // SAFETY: `Mmap::map` maps the file read-only and MAP_SHARED (not private: we see
        // what other processes write to the file, and nothing we do can write it). Rust
        // assumes the bytes behind the `&[u8]` it hands out do not change; for a shared file
        // mapping nobody can promise that, so safety rests on what readers do with the
        // bytes, not on them staying put:
        // * Every access is bounds-checked against lengths fixed before it (the mapping
        //   length, then each record's checked size), and no value read is trusted for
        //   anything but such checked slicing. A concurrent writer can make a reader see
        //   wrong values (reported as damage, or a wrong record) or, at worst, stop on a
        //   failed bounds check; it cannot make it read outside the mapping.
        // * A file that shrinks leaves pages past its new end mapped but unbacked; touching
        //   one raises SIGBUS. The `Registration` (taken below, before any byte is read, or
        //   the mapping is dropped unread) replaces such a page with zeros instead, and
        //   `shrunk` says where the data ended.
        // * The mapping lives in `self.map`, dropped after the registration (field order)
        //   and after every borrow of its bytes (they borrow `self`).
        let map = unsafe { Mmap::map(file) }?;
        let file = file.try_clone()?;
        let Some(guard) = Registration::new(map.as_ptr(), map.len()) else {
            return Ok(None);
        };
        Ok(Some(MappedFile {
            guard,
            map,
            path: path.as_ref().to_path_buf(),
            file,
        }))
    }

    /// The file's bytes, as long as it was when mapped.
    #[inline(always)]
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// The path it was mapped from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Hands the pages inside `[offset, offset + len)` back to the kernel (`MADV_DONTNEED`),
    /// so that a one-pass reader of a large file keeps a flat resident set. Reading them
    /// again is correct, only slower: they fault back in from the file.
    /// A range that does not lie inside the mapping releases nothing; false then, or when
    /// the kernel refused the advice.
    pub fn release(&self, offset: usize, len: usize) -> bool {
        // memmap2 checks offset and len against the mapping's length each on its own, not
        // their sum: a range running past the end would reach whatever is mapped after it.
        if offset
            .checked_add(len)
            .is_none_or(|end| end > self.map.len())
        {
            return false;
        }
        // SAFETY: the range lies inside the mapping (checked above), which is MAP_SHARED and
        // read-only, so MADV_DONTNEED only drops clean page-cache pages from our page
        // tables: touching them again, from any thread, faults them back in from the file
        // (its current bytes, as for any shared mapping: see `map`). Borrows of the bytes
        // stay valid pointers.
        unsafe {
            self.map
                .unchecked_advise_range(UncheckedAdvice::DontNeed, offset, len)
        }
        .is_ok()
    }

    /// Whether the file shrank since it was mapped: it is shorter now, or a page of it
    /// faulted (and reads as zeros). Cold: for a reader that met damage.
    #[cold]
    pub fn shrunk(&self) -> Option<Shrunk> {
        let now = self.file.metadata().map(|m| m.len()).ok();
        let end = match (now, self.guard.shrunk()) {
            (Some(n), _) if n < self.map.len() as u64 => n,
            (_, Some(at)) => at,
            _ => return None,
        };
        Some(Shrunk { end, now })
    }
}

impl std::ops::Deref for MappedFile {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.map
    }
}
