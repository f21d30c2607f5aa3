//! A Parquet table written as rows arrive, by threads of its own: encoders, each of which
//! fills a row group's column buffers from a unit of work and encodes and compresses them
//! (zstd), several groups at once, and a writer that appends the encoded groups to the file
//! in the order the units came. Two kinds of table share them:
//! - [`Table`]: rows filled one value at a time on the caller's thread; every [`ROW_GROUP`]
//!   rows the filled buffers are the unit an encoder takes (the small tables);
//! - [`ChunkTable`]: the unit is a chunk of the caller's data that the encoder makes rows of
//!   (the jobs table, whose rows cost about as much to make as to encode, more than one
//!   thread can keep up with beside the report's).
//!
//! At most one unit per encoder ([`MAX_ENCODERS`]) plus the one filling are in memory
//! whatever the capture's length (a hand-over waits for its encoder), so memory stays flat.
//! The file is the same whatever the number of encoders.
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
use parquet::column::writer::{get_column_writer, get_typed_column_writer_mut, ColumnCloseResult};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DataType, DoubleType, Int64Type};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{
    EnabledStatistics, WriterProperties, WriterPropertiesPtr, WriterVersion,
};
use parquet::file::writer::{SerializedFileWriter, SerializedPageWriter, TrackedWrite};
use parquet::schema::types::{ColumnPath, SchemaDescriptor, Type};

/// Rows per row group: small enough that a group's buffers are a few MB, large enough that
/// DuckDB and Spark split work by row group without overhead per group.
pub const ROW_GROUP: usize = 1 << 15;

/// Most encoder threads a table has. Measured on 10M events on 16 CPUs, making and
/// encoding the jobs table's rows (about 4,700 and 6,100 instructions a job) kept one thread
/// busy longer than the report's own; three keep up with room to spare.
pub const MAX_ENCODERS: usize = 3;

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

/// A row group's column buffers.
type Group = Vec<ColBuf>;

/// The rows of one row group being filled, a value at a time in the order of the fields.
pub struct Rows {
    fields: Arc<Vec<Field>>,
    cols: Group,
    /// Column the next value goes to, in the row being added.
    next: usize,
    /// Rows ended.
    len: usize,
}

impl Rows {
    fn new(fields: Arc<Vec<Field>>) -> Rows {
        let cols = fields.iter().map(|f| ColBuf::new(f.ty)).collect();
        Rows {
            fields,
            cols,
            next: 0,
            len: 0,
        }
    }

    /// Rows ended so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no row was ended.
    pub fn is_empty(&self) -> bool {
        self.len == 0
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

    /// Ends the row: every column had its value.
    #[inline]
    pub fn end_row(&mut self) {
        debug_assert_eq!(self.next, self.fields.len(), "a row of too few values");
        self.next = 0;
        self.len += 1;
    }

    /// Empties the buffers (keeping their memory) for the next row group.
    fn clear(&mut self) {
        self.cols.iter_mut().for_each(ColBuf::clear);
        self.next = 0;
        self.len = 0;
    }
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

/// A row group encoded and compressed, column by column: each chunk's bytes and what its
/// writer said of it (offsets relative to the chunk's own bytes).
type Encoded = Vec<(Bytes, ColumnCloseResult)>;

/// Writes `vals` (and `defs`, for a nullable column) to a column writer of type `T`.
fn write_typed<T: DataType>(
    w: &mut parquet::column::writer::ColumnWriter<'_>,
    vals: &[T::T],
    defs: Option<&[i16]>,
) -> parquet::errors::Result<()> {
    get_typed_column_writer_mut::<T>(w).write_batch(vals, defs, None)?;
    Ok(())
}

/// Encodes one row group of `group` (columns in `fields` order) into memory: what an
/// encoder thread does, in parallel with the others.
fn encode_group(
    schema: &SchemaDescriptor,
    props: &WriterPropertiesPtr,
    fields: &[Field],
    group: &mut Group,
) -> parquet::errors::Result<Encoded> {
    let mut out = Vec::with_capacity(fields.len());
    for (i, (f, c)) in fields.iter().zip(group.iter_mut()).enumerate() {
        let mut sink = TrackedWrite::new(Vec::new());
        let pages = Box::new(SerializedPageWriter::new(&mut sink));
        let mut col = get_column_writer(schema.column(i), props.clone(), pages);
        let defs = f.nullable.then_some(&c.defs[..]);
        match &mut c.vals {
            Vals::I64(v) => write_typed::<Int64Type>(&mut col, v, defs)?,
            Vals::F64(v) => write_typed::<DoubleType>(&mut col, v, defs)?,
            Vals::Bool(v) => write_typed::<BoolType>(&mut col, v, defs)?,
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
                write_typed::<ByteArrayType>(&mut col, &vals, defs)?;
            }
        }
        let close = col.close()?;
        out.push((Bytes::from(sink.into_inner()?), close));
    }
    Ok(out)
}

/// Appends an encoded row group to the file.
fn append_group<W: io::Write + Send>(
    w: &mut SerializedFileWriter<W>,
    group: Encoded,
) -> parquet::errors::Result<()> {
    let mut rg = w.next_row_group()?;
    for (bytes, close) in group {
        rg.append_column(&bytes, close)?;
    }
    rg.close()?;
    Ok(())
}

/// How many encoder threads a table gets: the spare threads ([`crate::spare_threads`]),
/// at least one, at most [`MAX_ENCODERS`].
fn encoders() -> usize {
    crate::spare_threads(1, MAX_ENCODERS)
}

/// The threads behind a table and its file: encoders that fill a row group from a unit of
/// work `U` and encode it, taking units in turn, and a writer that appends their groups
/// to the file in the same turn (so the file has the units' rows in the order they came).
/// The file is under its temporary name until [`Closed::publish`].
struct Pipeline<U> {
    /// Each encoder's input: units go to them in turn.
    encoders: Vec<SyncSender<U>>,
    /// The encoder the next unit goes to.
    turn: usize,
    encoder_threads: Vec<JoinHandle<()>>,
    writer: Option<JoinHandle<Result<(), String>>>,
    tmp: PathBuf,
    dest: PathBuf,
    finished: bool,
}

impl<U: Send + 'static> Pipeline<U> {
    /// Starts the table `name` to be written at `dest` (its directory is made) by `n`
    /// encoders (at least one), each filling its row group with `fill` (a clone each);
    /// `meta`: the file's key-value metadata.
    fn start<F>(
        name: &str,
        dest: PathBuf,
        fields: Arc<Vec<Field>>,
        meta: Vec<(String, String)>,
        n: usize,
        fill: F,
    ) -> io::Result<Pipeline<U>>
    where
        F: FnMut(U, &mut Rows) + Clone + Send + 'static,
    {
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
        // From here on a failure removes the temporary file (Drop).
        let mut p = Pipeline {
            encoders: Vec::new(),
            turn: 0,
            encoder_threads: Vec::new(),
            writer: None,
            tmp,
            dest,
            finished: false,
        };
        let schema = Arc::new(schema(name, &fields).map_err(pq_err)?);
        let meta = meta.into_iter().map(|(k, v)| KeyValue::new(k, v)).collect();
        let props = Arc::new(properties(&fields, meta).map_err(pq_err)?);
        let mut writer = SerializedFileWriter::new(
            BufWriter::with_capacity(1 << 20, file),
            schema.clone(),
            props.clone(),
        )
        .map_err(pq_err)?;
        let descr = Arc::new(SchemaDescriptor::new(schema));
        let mut outputs = Vec::new();
        for i in 0..n.max(1) {
            // Rendezvous: a unit waits until its encoder takes it, so that at most one
            // unit per encoder is in memory.
            let (tx, rx) = sync_channel::<U>(0);
            let (out_tx, out_rx) = sync_channel::<Result<Encoded, String>>(1);
            let (descr, props) = (descr.clone(), props.clone());
            let mut rows = Rows::new(fields.clone());
            let mut fill = fill.clone();
            p.encoder_threads.push(
                std::thread::Builder::new()
                    .name(format!("parquet-{name}-enc{i}"))
                    .spawn(move || {
                        while let Ok(unit) = rx.recv() {
                            fill(unit, &mut rows);
                            let encoded =
                                encode_group(&descr, &props, &rows.fields, &mut rows.cols)
                                    .map_err(|e| e.to_string());
                            if out_tx.send(encoded).is_err() {
                                break; // the writer stopped on an error
                            }
                            rows.clear();
                        }
                    })?,
            );
            p.encoders.push(tx);
            outputs.push(out_rx);
        }
        p.writer = Some(
            std::thread::Builder::new()
                .name(format!("parquet-{name}"))
                .spawn(move || -> Result<(), String> {
                    // Units were handed out in turn, so the first encoder with none left
                    // means there are no more: every later unit would have gone to it first.
                    for out in outputs.iter().cycle() {
                        let Ok(encoded) = out.recv() else { break };
                        append_group(&mut writer, encoded?).map_err(|e| e.to_string())?;
                    }
                    writer.close().map_err(|e| e.to_string())?;
                    Ok(())
                })?,
        );
        Ok(p)
    }

    /// Hands `unit` to the next encoder (waiting until it takes it).
    fn push(&mut self, unit: U) -> io::Result<()> {
        let sent = self
            .encoders
            .get(self.turn)
            .is_some_and(|tx| tx.send(unit).is_ok());
        self.turn = (self.turn + 1) % self.encoders.len().max(1);
        if sent {
            return Ok(());
        }
        // The writer stopped on an error: its message says which.
        Err(self
            .join()
            .err()
            .unwrap_or_else(|| io::Error::other("parquet writer stopped")))
    }

    /// Waits for the encoders and the writer; the writer's error, if it had one (an
    /// encoder's error reaches the writer in its turn).
    fn join(&mut self) -> io::Result<()> {
        self.encoders.clear();
        // A panicked encoder ends its turn early, and the writer would take that as the
        // end of the rows: the file is then incomplete, which must be an error.
        let panicked = self
            .encoder_threads
            .drain(..)
            .map(JoinHandle::join)
            .filter(Result::is_err)
            .count()
            > 0;
        let written = self.writer.take().map(JoinHandle::join);
        if panicked {
            return Err(io::Error::other(format!(
                "{}: a parquet encoder thread panicked",
                self.dest.display()
            )));
        }
        match written {
            None | Some(Ok(Ok(()))) => Ok(()),
            Some(Ok(Err(e))) => Err(io::Error::other(format!("{}: {e}", self.dest.display()))),
            Some(Err(_)) => Err(io::Error::other(format!(
                "{}: the parquet writer thread panicked",
                self.dest.display()
            ))),
        }
    }

    /// Waits for the last groups and writes the footer: the file is whole, still under its
    /// temporary name.
    fn close(mut self) -> io::Result<Closed> {
        self.join()?;
        self.finished = true;
        Ok(Closed {
            tmp: std::mem::take(&mut self.tmp),
            dest: std::mem::take(&mut self.dest),
            published: false,
        })
    }
}

impl<U> Drop for Pipeline<U> {
    fn drop(&mut self) {
        if !self.finished {
            // Unfinished (an error, or the run failed): no half file is left behind.
            self.encoders.clear();
            self.encoder_threads.drain(..).for_each(|t| {
                let _ = t.join();
            });
            if let Some(w) = self.writer.take() {
                let _ = w.join();
            }
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// A Parquet table filled a row at a time on the caller's thread (see the module doc):
/// every [`ROW_GROUP`] rows, the filled buffers go to an encoder.
pub struct Table {
    rows: Rows,
    pipeline: Pipeline<Group>,
    /// Buffers the encoders are done with, for reuse.
    spare: Receiver<Group>,
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
        Table::with_encoders(name, dest, fields, meta, encoders())
    }

    /// [`Table::create`] with `n` encoder threads (at least one).
    fn with_encoders(
        name: &str,
        dest: PathBuf,
        fields: Vec<Field>,
        meta: Vec<(String, String)>,
        n: usize,
    ) -> io::Result<Table> {
        let fields = Arc::new(fields);
        let (spare_tx, spare) = sync_channel::<Group>(n.max(1));
        // The encoder takes the filled group in place of its own, emptied by the last
        // encoding, which goes back to the table for the next rows.
        let fill = move |group: Group, rows: &mut Rows| {
            let done = std::mem::replace(&mut rows.cols, group);
            let _ = spare_tx.try_send(done);
        };
        let pipeline = Pipeline::start(name, dest, fields.clone(), meta, n, fill)?;
        Ok(Table {
            rows: Rows::new(fields),
            pipeline,
            spare,
        })
    }

    /// The table's columns.
    pub fn fields(&self) -> &[Field] {
        &self.rows.fields
    }

    /// The next value of the row: an integer, or null.
    #[inline]
    pub fn i64(&mut self, v: Option<i64>) {
        self.rows.i64(v)
    }

    /// The next value: a number, or null (NaN is written as null).
    #[inline]
    pub fn f64(&mut self, v: Option<f64>) {
        self.rows.f64(v)
    }

    /// The next value: a boolean, or null.
    #[inline]
    pub fn bool(&mut self, v: Option<bool>) {
        self.rows.bool(v)
    }

    /// The next value: a string (UTF-8), or null.
    #[inline]
    pub fn str(&mut self, v: Option<&[u8]>) {
        self.rows.str(v)
    }

    /// Ends the row (every column had its value); hands a full row group to an encoder.
    pub fn end_row(&mut self) -> io::Result<()> {
        self.rows.end_row();
        if self.rows.len == ROW_GROUP {
            self.flush()?;
        }
        Ok(())
    }

    /// Hands the rows so far to an encoder as a row group.
    fn flush(&mut self) -> io::Result<()> {
        if self.rows.is_empty() {
            return Ok(());
        }
        let fresh = match self.spare.try_recv() {
            Ok(g) => g,
            Err(_) => self.rows.fields.iter().map(|f| ColBuf::new(f.ty)).collect(),
        };
        let full = std::mem::replace(&mut self.rows.cols, fresh);
        self.rows.len = 0;
        self.pipeline.push(full)
    }

    /// Writes the last rows and the footer: the file is whole, still under its temporary
    /// name until [`Closed::publish`] (so that several tables can all be written before any
    /// of them appears).
    pub fn close(mut self) -> io::Result<Closed> {
        self.flush()?;
        self.pipeline.close()
    }

    /// Writes the last rows and the footer, then moves the file into place.
    pub fn finish(self) -> io::Result<()> {
        self.close()?.publish()
    }
}

/// A Parquet table whose row groups are filled on its encoder threads, several at once:
/// each unit of work `U` handed to [`ChunkTable::push`] (a chunk of jobs) becomes one row
/// group, filled by the function given to [`ChunkTable::create`]. For a table whose rows
/// cost more to make than the caller can afford on its own thread.
pub struct ChunkTable<U> {
    pipeline: Pipeline<U>,
}

impl<U: Send + 'static> ChunkTable<U> {
    /// Starts the table `name` to be written at `dest`; `fill` makes the rows of one unit.
    pub fn create<F>(
        name: &str,
        dest: PathBuf,
        fields: Vec<Field>,
        meta: Vec<(String, String)>,
        fill: F,
    ) -> io::Result<ChunkTable<U>>
    where
        F: FnMut(U, &mut Rows) + Clone + Send + 'static,
    {
        ChunkTable::with_encoders(name, dest, fields, meta, fill, encoders())
    }

    /// [`ChunkTable::create`] with `n` encoder threads (at least one).
    fn with_encoders<F>(
        name: &str,
        dest: PathBuf,
        fields: Vec<Field>,
        meta: Vec<(String, String)>,
        fill: F,
        n: usize,
    ) -> io::Result<ChunkTable<U>>
    where
        F: FnMut(U, &mut Rows) + Clone + Send + 'static,
    {
        let pipeline = Pipeline::start(name, dest, Arc::new(fields), meta, n, fill)?;
        Ok(ChunkTable { pipeline })
    }

    /// Hands `unit` to the next encoder, which makes it a row group (waits while every
    /// encoder is busy: memory stays bounded).
    pub fn push(&mut self, unit: U) -> io::Result<()> {
        self.pipeline.push(unit)
    }

    /// Waits for the last row groups and writes the footer (see [`Table::close`]).
    pub fn close(self) -> io::Result<Closed> {
        self.pipeline.close()
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

    /// Writes `rows` rows of five columns (every type, nulls) with `encoders` threads.
    fn write_rows(dest: &Path, rows: usize, encoders: usize) {
        let fields = vec![
            Field::req("n", Ty::I64),
            Field::opt("half", Ty::I64),
            Field::opt("s", Ty::Str),
            Field::req("b", Ty::Bool),
            Field::opt("f", Ty::F64),
        ];
        let mut t =
            Table::with_encoders("t", dest.to_path_buf(), fields, vec![], encoders).unwrap();
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
    }

    /// Rows go out a row group at a time as they fill (what keeps memory flat), encoded on
    /// several threads and written in the order they came: a table of 4.5 groups' rows
    /// with three encoders (the first encoder has two groups, the last none at the end) is
    /// five row groups, every value back in its place, nulls included.
    #[test]
    fn rows_are_flushed_a_row_group_at_a_time_in_order() {
        let dir = std::env::temp_dir().join(format!("grt-table-{}", std::process::id()));
        let dest = dir.join("t.parquet");
        let rows = ROW_GROUP * 9 / 2;
        write_rows(&dest, rows, 3);
        let r = SerializedFileReader::new(std::fs::File::open(&dest).unwrap()).unwrap();
        assert_eq!(r.metadata().num_row_groups(), 5);
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

    /// The file does not depend on how many encoders wrote it (a dataset is the same on a
    /// laptop and on a 64-CPU host): one and three encoders give the same bytes.
    #[test]
    fn the_file_is_the_same_for_any_number_of_encoders() {
        let dir = std::env::temp_dir().join(format!("grt-table-enc-{}", std::process::id()));
        let rows = ROW_GROUP * 7 / 2;
        write_rows(&dir.join("one.parquet"), rows, 1);
        write_rows(&dir.join("three.parquet"), rows, 3);
        let one = std::fs::read(dir.join("one.parquet")).unwrap();
        assert!(one == std::fs::read(dir.join("three.parquet")).unwrap());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A chunk table makes each unit one row group on several encoders at once, and the
    /// file has the units in the order they were pushed: 7 chunks of different sizes (1 row
    /// to a full row group) on 3 encoders, read back row for row.
    #[test]
    fn chunks_become_row_groups_in_the_order_pushed() {
        let dir = std::env::temp_dir().join(format!("grt-table-chunk-{}", std::process::id()));
        let dest = dir.join("c.parquet");
        let fields = vec![Field::req("n", Ty::I64), Field::opt("s", Ty::Str)];
        // a chunk: the first value and how many rows
        let fill = |(first, len): (i64, i64), t: &mut Rows| {
            for n in first..first + len {
                t.i64(Some(n));
                let s = format!("v{}", n % 5);
                t.str((n % 4 != 0).then_some(s.as_bytes()));
                t.end_row();
            }
        };
        let mut t = ChunkTable::with_encoders("c", dest.clone(), fields, vec![], fill, 3).unwrap();
        let sizes = [5000_i64, 1, 32768, 700, 12000, 3, 250];
        let mut first = 0;
        for len in sizes {
            t.push((first, len)).unwrap();
            first += len;
        }
        t.close().unwrap().publish().unwrap();
        let r = SerializedFileReader::new(std::fs::File::open(&dest).unwrap()).unwrap();
        let groups: Vec<i64> = (0..r.metadata().num_row_groups())
            .map(|i| r.metadata().row_group(i).num_rows())
            .collect();
        assert_eq!(groups, sizes);
        let mut count = 0;
        for (n, row) in r.get_row_iter(None).unwrap().enumerate() {
            let row = row.unwrap();
            let n = n as i64;
            assert_eq!(row.get_long(0).unwrap(), n);
            assert_eq!(
                row.get_string(1).ok().cloned(),
                (n % 4 != 0).then(|| format!("v{}", n % 5))
            );
            count += 1;
        }
        assert_eq!(count, first);
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
