//! One Parquet table written as rows arrive: values go into column buffers, and every
//! [`ROW_GROUP`] rows the filled buffers are handed to a thread of the table's own, which
//! encodes and compresses them (zstd) into a row group while the next rows fill other
//! buffers. At most two row groups are in memory whatever the capture's length (one
//! filling, one being written: the hand-over waits for the writer), so memory stays flat.
//!
//! The file is written under a hidden temporary name in its directory and renamed into
//! place by [`Table::finish`]: a reader of the dataset never sees half a file, and a failed
//! run leaves none (the temporary file goes when the [`Table`] is dropped unfinished).
//!
//! Only four physical types are used (INT64, DOUBLE, BOOLEAN, UTF-8 BYTE_ARRAY), which
//! every Parquet reader (DuckDB, Spark, Trino, ClickHouse) maps the same way; SCHEMA.md says
//! what each column means.

use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use bytes::Bytes;
use parquet::basic::{Compression, Encoding, LogicalType, Repetition, Type as Physical, ZstdLevel};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::{ColumnPath, Type};

/// Rows per row group: small enough that a group's buffers are a few MB, large enough that
/// DuckDB and Spark split work by row group without overhead per group.
pub const ROW_GROUP: usize = 1 << 15;

/// A column's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// INT64: counts, ids, nanoseconds.
    I64,
    /// DOUBLE: shares (fractions of 1), rates.
    F64,
    /// BOOLEAN.
    Bool,
    /// BYTE_ARRAY annotated STRING (UTF-8).
    Str,
}

impl Ty {
    /// The type's name in SCHEMA.md and in DuckDB's `DESCRIBE`.
    pub fn sql(self) -> &'static str {
        match self {
            Ty::I64 => "BIGINT",
            Ty::F64 => "DOUBLE",
            Ty::Bool => "BOOLEAN",
            Ty::Str => "VARCHAR",
        }
    }
}

/// One column of a table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    pub ty: Ty,
    /// Whether the column may be null (OPTIONAL); else every row has a value (REQUIRED).
    pub nullable: bool,
}

impl Field {
    /// A column that may be null.
    pub fn opt(name: impl Into<String>, ty: Ty) -> Field {
        Field {
            name: name.into(),
            ty,
            nullable: true,
        }
    }

    /// A column every row has.
    pub fn req(name: impl Into<String>, ty: Ty) -> Field {
        Field {
            name: name.into(),
            ty,
            nullable: false,
        }
    }
}

/// The values of one column in the row group being filled.
enum Vals {
    I64(Vec<i64>),
    F64(Vec<f64>),
    Bool(Vec<bool>),
    /// Strings end to end, and where each ends.
    Str(Vec<u8>, Vec<usize>),
}

struct ColBuf {
    vals: Vals,
    /// Definition levels (1 present, 0 null) of a nullable column, one per row.
    defs: Vec<i16>,
}

impl ColBuf {
    fn new(ty: Ty) -> ColBuf {
        ColBuf {
            vals: match ty {
                Ty::I64 => Vals::I64(Vec::new()),
                Ty::F64 => Vals::F64(Vec::new()),
                Ty::Bool => Vals::Bool(Vec::new()),
                Ty::Str => Vals::Str(Vec::new(), Vec::new()),
            },
            defs: Vec::new(),
        }
    }

    fn clear(&mut self) {
        match &mut self.vals {
            Vals::I64(v) => v.clear(),
            Vals::F64(v) => v.clear(),
            Vals::Bool(v) => v.clear(),
            Vals::Str(b, e) => {
                b.clear();
                e.clear();
            }
        }
        self.defs.clear();
    }
}

/// A row group's columns on their way to the writer thread.
type Group = Vec<ColBuf>;

/// A Parquet table being written (see the module doc).
pub struct Table {
    fields: Arc<Vec<Field>>,
    cols: Group,
    /// Column the next value goes to, in the row being added.
    next: usize,
    rows: usize,
    tx: Option<SyncSender<Group>>,
    /// Buffers the writer is done with, for reuse.
    spare: Receiver<Group>,
    thread: Option<JoinHandle<Result<(), String>>>,
    tmp: PathBuf,
    dest: PathBuf,
    finished: bool,
}

/// The message of a Parquet error, as an I/O error.
fn pq_err(e: parquet::errors::ParquetError) -> io::Error {
    io::Error::other(e.to_string())
}

/// The Parquet schema of `fields`, named `name`.
pub fn schema(name: &str, fields: &[Field]) -> parquet::errors::Result<Type> {
    let cols = fields
        .iter()
        .map(|f| {
            let (phys, logical) = match f.ty {
                Ty::I64 => (Physical::INT64, None),
                Ty::F64 => (Physical::DOUBLE, None),
                Ty::Bool => (Physical::BOOLEAN, None),
                Ty::Str => (Physical::BYTE_ARRAY, Some(LogicalType::String)),
            };
            let rep = if f.nullable {
                Repetition::OPTIONAL
            } else {
                Repetition::REQUIRED
            };
            Type::primitive_type_builder(&f.name, phys)
                .with_repetition(rep)
                .with_logical_type(logical)
                .build()
                .map(Arc::new)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Type::group_type_builder(name).with_fields(cols).build()
}

/// How the columns are encoded: strings and booleans by dictionary (ring names, process
/// names, tags repeat), integers by DELTA_BINARY_PACKED (times rise, ids repeat: both pack
/// into a few bits a value) without a dictionary, all compressed with zstd at level 1.
/// Min/max statistics only for numbers, which readers prune row groups by (times, ids).
///
/// Measured on 200K events (callgrind, whole run): zstd 3 -> 1 saves 2.5% of the
/// instructions for a 0.4% larger jobs file; no min/max of strings and booleans 3.4%
/// (string comparisons). PLAIN integers (+26% instructions, +18% size) and dictionaries
/// (+33%, +62%) cost more than DELTA_BINARY_PACKED.
fn properties(fields: &[Field], meta: Vec<KeyValue>) -> parquet::errors::Result<WriterProperties> {
    let mut b = WriterProperties::builder()
        .set_writer_version(WriterVersion::PARQUET_1_0)
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1)?))
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_max_row_group_row_count(Some(ROW_GROUP))
        .set_created_by(format!("grtreport {}", env!("CARGO_PKG_VERSION")))
        .set_key_value_metadata(Some(meta));
    for f in fields {
        let path = ColumnPath::new(vec![f.name.clone()]);
        if matches!(f.ty, Ty::Str | Ty::Bool) {
            b = b.set_column_statistics_enabled(path.clone(), EnabledStatistics::None);
        }
        if matches!(f.ty, Ty::I64 | Ty::F64) {
            b = b.set_column_dictionary_enabled(path.clone(), false);
            if f.ty == Ty::I64 {
                b = b.set_column_encoding(path, Encoding::DELTA_BINARY_PACKED);
            }
        }
    }
    Ok(b.build())
}

/// Writes one row group of `group` (columns in `fields` order).
fn write_group<W: io::Write + Send>(
    w: &mut SerializedFileWriter<W>,
    fields: &[Field],
    group: &mut Group,
) -> parquet::errors::Result<()> {
    let mut rg = w.next_row_group()?;
    for (f, c) in fields.iter().zip(group.iter_mut()) {
        let mut col = rg
            .next_column()?
            .ok_or_else(|| parquet::errors::ParquetError::General("too few columns".into()))?;
        let defs = f.nullable.then_some(&c.defs[..]);
        match &mut c.vals {
            Vals::I64(v) => {
                col.typed::<Int64Type>().write_batch(v, defs, None)?;
            }
            Vals::F64(v) => {
                col.typed::<DoubleType>().write_batch(v, defs, None)?;
            }
            Vals::Bool(v) => {
                col.typed::<BoolType>().write_batch(v, defs, None)?;
            }
            Vals::Str(bytes, ends) => {
                // One buffer for the group's strings; each value is a slice of it.
                let all = Bytes::from(std::mem::take(bytes));
                let mut start = 0;
                let vals: Vec<ByteArray> = ends
                    .iter()
                    .map(|&e| {
                        let v = ByteArray::from(all.slice(start..e));
                        start = e;
                        v
                    })
                    .collect();
                col.typed::<ByteArrayType>()
                    .write_batch(&vals, defs, None)?;
            }
        }
        col.close()?;
    }
    rg.close()?;
    Ok(())
}

impl Table {
    /// Starts the table `name` to be written at `dest` (its directory is made); `meta`: the
    /// file's key-value metadata.
    pub fn create(
        name: &str,
        dest: PathBuf,
        fields: Vec<Field>,
        meta: Vec<(String, String)>,
    ) -> io::Result<Table> {
        let dir = dest.parent().unwrap_or(Path::new(".")).to_path_buf();
        std::fs::create_dir_all(&dir)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?;
        let file_name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // Hidden (a leading dot): Spark, DuckDB's globs and Trino skip it.
        let tmp = dir.join(format!(".{file_name}.{}.tmp", std::process::id()));
        let file = std::fs::File::create(&tmp)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", tmp.display())))?;
        let schema = Arc::new(schema(name, &fields).map_err(pq_err)?);
        let meta = meta.into_iter().map(|(k, v)| KeyValue::new(k, v)).collect();
        let props = Arc::new(properties(&fields, meta).map_err(pq_err)?);
        let mut writer =
            SerializedFileWriter::new(BufWriter::with_capacity(1 << 20, file), schema, props)
                .map_err(pq_err)?;
        let fields = Arc::new(fields);
        // Rendezvous: a full group waits until the writer takes it (two groups at most).
        let (tx, rx) = sync_channel::<Group>(0);
        let (back_tx, spare) = sync_channel::<Group>(1);
        let f2 = fields.clone();
        let thread = std::thread::Builder::new()
            .name(format!("parquet-{name}"))
            .spawn(move || -> Result<(), String> {
                while let Ok(mut group) = rx.recv() {
                    write_group(&mut writer, &f2, &mut group).map_err(|e| e.to_string())?;
                    group.iter_mut().for_each(ColBuf::clear);
                    let _ = back_tx.try_send(group);
                }
                writer.close().map_err(|e| e.to_string())?;
                Ok(())
            })?;
        let cols = fields.iter().map(|f| ColBuf::new(f.ty)).collect();
        Ok(Table {
            fields,
            cols,
            next: 0,
            rows: 0,
            tx: Some(tx),
            spare,
            thread: Some(thread),
            tmp,
            dest,
            finished: false,
        })
    }

    /// The table's columns.
    pub fn fields(&self) -> &[Field] {
        &self.fields
    }

    /// The next column of the row being added, which must be nullable if `v` is None.
    #[inline]
    fn col(&mut self, present: bool) -> &mut ColBuf {
        let i = self.next;
        self.next += 1;
        let nullable = self.fields[i].nullable;
        debug_assert!(
            present || nullable,
            "null in column {}",
            self.fields[i].name
        );
        let c = &mut self.cols[i];
        if nullable {
            c.defs.push(i16::from(present));
        }
        c
    }

    /// The next value of the row: an integer, or null.
    #[inline]
    pub fn i64(&mut self, v: Option<i64>) {
        let c = self.col(v.is_some());
        if let (Vals::I64(vals), Some(v)) = (&mut c.vals, v) {
            vals.push(v);
        }
    }

    /// The next value: a number, or null (NaN is written as null).
    #[inline]
    pub fn f64(&mut self, v: Option<f64>) {
        let v = v.filter(|v| v.is_finite());
        let c = self.col(v.is_some());
        if let (Vals::F64(vals), Some(v)) = (&mut c.vals, v) {
            vals.push(v);
        }
    }

    /// The next value: a boolean, or null.
    #[inline]
    pub fn bool(&mut self, v: Option<bool>) {
        let c = self.col(v.is_some());
        if let (Vals::Bool(vals), Some(v)) = (&mut c.vals, v) {
            vals.push(v);
        }
    }

    /// The next value: a string (UTF-8), or null.
    #[inline]
    pub fn str(&mut self, v: Option<&[u8]>) {
        let c = self.col(v.is_some());
        if let (Vals::Str(bytes, ends), Some(v)) = (&mut c.vals, v) {
            bytes.extend_from_slice(v);
            ends.push(bytes.len());
        }
    }

    /// Ends the row (every column had its value); hands a full row group to the writer.
    pub fn end_row(&mut self) -> io::Result<()> {
        debug_assert_eq!(self.next, self.fields.len(), "a row of too few values");
        self.next = 0;
        self.rows += 1;
        if self.rows == ROW_GROUP {
            self.flush()?;
        }
        Ok(())
    }

    /// Hands the rows so far to the writer thread as a row group.
    fn flush(&mut self) -> io::Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        let fresh = match self.spare.try_recv() {
            Ok(g) => g,
            Err(_) => self.fields.iter().map(|f| ColBuf::new(f.ty)).collect(),
        };
        let full = std::mem::replace(&mut self.cols, fresh);
        self.rows = 0;
        let sent = self.tx.as_ref().is_some_and(|tx| tx.send(full).is_ok());
        if !sent {
            // The writer stopped on an error: its message says which.
            return Err(self
                .join()
                .err()
                .unwrap_or_else(|| io::Error::other("parquet writer stopped")));
        }
        Ok(())
    }

    /// Waits for the writer thread; its error, if it had one.
    fn join(&mut self) -> io::Result<()> {
        self.tx = None;
        match self.thread.take().map(JoinHandle::join) {
            None | Some(Ok(Ok(()))) => Ok(()),
            Some(Ok(Err(e))) => Err(io::Error::other(format!("{}: {e}", self.dest.display()))),
            Some(Err(_)) => Err(io::Error::other(format!(
                "{}: the parquet writer thread panicked",
                self.dest.display()
            ))),
        }
    }

    /// Writes the last rows and the footer: the file is whole, still under its temporary
    /// name until [`Closed::publish`] (so that several tables can all be written before any
    /// of them appears).
    pub fn close(mut self) -> io::Result<Closed> {
        self.flush()?;
        self.join()?;
        self.finished = true;
        Ok(Closed {
            tmp: std::mem::take(&mut self.tmp),
            dest: std::mem::take(&mut self.dest),
            published: false,
        })
    }

    /// Writes the last rows and the footer, then moves the file into place.
    pub fn finish(self) -> io::Result<()> {
        self.close()?.publish()
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        if !self.finished {
            // Unfinished (an error, or the run failed): no half file is left behind.
            let _ = self.join();
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// A table written whole under its temporary name ([`Table::close`]); dropped without
/// [`publish`](Closed::publish), its file goes.
pub struct Closed {
    tmp: PathBuf,
    dest: PathBuf,
    published: bool,
}

impl Closed {
    /// Moves the file into place (replacing an earlier one of the same name).
    pub fn publish(mut self) -> io::Result<()> {
        std::fs::rename(&self.tmp, &self.dest)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", self.dest.display())))?;
        self.published = true;
        Ok(())
    }
}

impl Drop for Closed {
    fn drop(&mut self) {
        if !self.published {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::RowAccessor;

    /// Rows go out a row group at a time as they fill (what keeps memory flat): a table of
    /// 2.5 groups' rows is three row groups, every value back as written, nulls included.
    #[test]
    fn rows_are_flushed_a_row_group_at_a_time() {
        let dir = std::env::temp_dir().join(format!("grt-table-{}", std::process::id()));
        let dest = dir.join("t.parquet");
        let fields = vec![
            Field::req("n", Ty::I64),
            Field::opt("half", Ty::I64),
            Field::opt("s", Ty::Str),
            Field::req("b", Ty::Bool),
            Field::opt("f", Ty::F64),
        ];
        let rows = ROW_GROUP * 5 / 2;
        let mut t = Table::create("t", dest.clone(), fields, vec![]).unwrap();
        for n in 0..rows {
            t.i64(Some(n as i64));
            t.i64((n % 2 == 0).then_some(n as i64 / 2));
            let s = format!("s{}", n % 7);
            t.str((n % 3 != 0).then_some(s.as_bytes()));
            t.bool(Some(n % 5 == 0));
            t.f64(Some(if n % 4 == 0 { f64::NAN } else { n as f64 }));
            t.end_row().unwrap();
        }
        // Nothing is in place before the end.
        assert!(!dest.exists());
        t.finish().unwrap();
        let r = SerializedFileReader::new(std::fs::File::open(&dest).unwrap()).unwrap();
        assert_eq!(r.metadata().num_row_groups(), 3);
        let mut count = 0;
        for (n, row) in r.get_row_iter(None).unwrap().enumerate() {
            let row = row.unwrap();
            assert_eq!(row.get_long(0).unwrap(), n as i64);
            assert_eq!(row.get_long(1).ok(), (n % 2 == 0).then_some(n as i64 / 2));
            assert_eq!(
                row.get_string(2).ok().cloned(),
                (n % 3 != 0).then(|| format!("s{}", n % 7))
            );
            assert_eq!(row.get_bool(3).unwrap(), n % 5 == 0);
            assert_eq!(row.get_double(4).ok(), (n % 4 != 0).then_some(n as f64));
            count += 1;
        }
        assert_eq!(count, rows);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A table dropped unfinished (a failed run) leaves no file, not even its temporary one.
    #[test]
    fn an_unfinished_table_leaves_nothing() {
        let dir = std::env::temp_dir().join(format!("grt-table-drop-{}", std::process::id()));
        let mut t = Table::create(
            "t",
            dir.join("t.parquet"),
            vec![Field::req("n", Ty::I64)],
            vec![],
        )
        .unwrap();
        t.i64(Some(1));
        t.end_row().unwrap();
        drop(t);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A table closed but never published (another table of its capture failed) leaves
    /// no file; published, it is in place.
    #[test]
    fn a_closed_table_appears_only_when_published() {
        let dir = std::env::temp_dir().join(format!("grt-table-closed-{}", std::process::id()));
        let make = |name: &str| {
            let mut t =
                Table::create("t", dir.join(name), vec![Field::req("n", Ty::I64)], vec![]).unwrap();
            t.i64(Some(1));
            t.end_row().unwrap();
            t.close().unwrap()
        };
        drop(make("a.parquet"));
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        make("b.parquet").publish().unwrap();
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["b.parquet"]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
