//! The Arrow C Data Interface, read-only: the three C structs of the specification
//! (<https://arrow.apache.org/docs/format/CDataInterface.html>, `ArrowArrayStream` from the C Stream
//! Interface) and the reading of one array's buffers into a [`RawPart`], without copying them.
//!
//! Python objects hand these structs over in PyCapsules (`__arrow_c_array__`,
//! `__arrow_c_stream__`, pyarrow >= 14 and any library that follows the PyCapsule protocol). The
//! capsule (or, for a stream, the [`OwnedArray`] that we released from it) stays alive for as long
//! as the buffers are read; see `input.rs`.

use std::ffi::{c_char, c_int, c_void, CStr};

use bloomlanes_core::KeyType;

use crate::errors::Error;
use crate::input::{RawPart, RawValues};

/// `struct ArrowSchema` of the C Data Interface.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct ArrowSchema {
    format: *const c_char,
    name: *const c_char,
    metadata: *const c_char,
    flags: i64,
    n_children: i64,
    children: *mut *mut ArrowSchema,
    dictionary: *mut ArrowSchema,
    release: Option<unsafe extern "C" fn(*mut ArrowSchema)>,
    private_data: *mut c_void,
}

/// `struct ArrowArray` of the C Data Interface.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct ArrowArray {
    length: i64,
    null_count: i64,
    offset: i64,
    n_buffers: i64,
    n_children: i64,
    buffers: *mut *const c_void,
    children: *mut *mut ArrowArray,
    dictionary: *mut ArrowArray,
    release: Option<unsafe extern "C" fn(*mut ArrowArray)>,
    private_data: *mut c_void,
}

/// `struct ArrowArrayStream` of the C Stream Interface.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct ArrowArrayStream {
    get_schema: Option<unsafe extern "C" fn(*mut ArrowArrayStream, *mut ArrowSchema) -> c_int>,
    get_next: Option<unsafe extern "C" fn(*mut ArrowArrayStream, *mut ArrowArray) -> c_int>,
    get_last_error: Option<unsafe extern "C" fn(*mut ArrowArrayStream) -> *const c_char>,
    release: Option<unsafe extern "C" fn(*mut ArrowArrayStream)>,
    private_data: *mut c_void,
}

impl ArrowSchema {
    const fn empty() -> ArrowSchema {
        ArrowSchema {
            format: std::ptr::null(),
            name: std::ptr::null(),
            metadata: std::ptr::null(),
            flags: 0,
            n_children: 0,
            children: std::ptr::null_mut(),
            dictionary: std::ptr::null_mut(),
            release: None,
            private_data: std::ptr::null_mut(),
        }
    }
}

impl ArrowArray {
    const fn empty() -> ArrowArray {
        ArrowArray {
            length: 0,
            null_count: 0,
            offset: 0,
            n_buffers: 0,
            n_children: 0,
            buffers: std::ptr::null_mut(),
            children: std::ptr::null_mut(),
            dictionary: std::ptr::null_mut(),
            release: None,
            private_data: std::ptr::null_mut(),
        }
    }
}

/// A schema moved out of a stream: ours to release.
pub(crate) struct OwnedSchema(Box<ArrowSchema>);

/// An array moved out of a stream: ours to release (which frees its buffers).
pub(crate) struct OwnedArray(Box<ArrowArray>);

impl Drop for OwnedSchema {
    fn drop(&mut self) {
        if let Some(release) = self.0.release {
            // SAFETY: the producer filled this struct and set `release`; the specification says
            // the consumer calls it exactly once, after which the struct is marked released.
            unsafe { release(&mut *self.0) };
        }
    }
}

impl Drop for OwnedArray {
    fn drop(&mut self) {
        if let Some(release) = self.0.release {
            // SAFETY: as for `OwnedSchema`: called once, by the owner, on a live struct.
            unsafe { release(&mut *self.0) };
        }
    }
}

impl OwnedSchema {
    /// The schema.
    pub(crate) fn get(&self) -> &ArrowSchema {
        &self.0
    }
}

impl OwnedArray {
    /// The array.
    pub(crate) fn get(&self) -> &ArrowArray {
        &self.0
    }
}

/// The last error message of a stream, for a failed call.
///
/// # Safety
/// `stream` is a live stream.
unsafe fn stream_error(stream: *mut ArrowArrayStream, code: c_int) -> Error {
    // SAFETY: the caller guarantees a live stream; `get_last_error` returns null or a
    // NUL-terminated string valid until the next call on the stream.
    let msg = unsafe {
        (*stream)
            .get_last_error
            .map(|f| f(stream))
            .filter(|p| !p.is_null())
            .map(|p| CStr::from_ptr(p).to_string_lossy().into_owned())
    };
    Error::value(format!(
        "Arrow stream failed (error {code}): {}",
        msg.unwrap_or_else(|| "no message".into())
    ))
}

/// Calls the stream's callback `callback` (named `name` in the error when the stream has none),
/// which fills `out`; a non-zero return is the stream's error.
///
/// # Safety
/// `stream` is a live stream and `callback` one of its own.
unsafe fn stream_call<T>(
    stream: *mut ArrowArrayStream,
    callback: Option<unsafe extern "C" fn(*mut ArrowArrayStream, *mut T) -> c_int>,
    name: &str,
    out: &mut T,
) -> Result<(), Error> {
    let f = callback.ok_or_else(|| Error::value(format!("Arrow stream has no {name} callback")))?;
    // SAFETY: a live stream and its own callback (caller), with a struct for it to fill.
    let code = unsafe { f(stream, out) };
    if code != 0 {
        // SAFETY: a live stream.
        return Err(unsafe { stream_error(stream, code) });
    }
    Ok(())
}

/// Reads the schema of a stream.
///
/// # Safety
/// `stream` points to a live `ArrowArrayStream` (from a capsule we keep alive).
pub(crate) unsafe fn stream_schema(stream: *mut ArrowArrayStream) -> Result<OwnedSchema, Error> {
    let mut schema = Box::new(ArrowSchema::empty());
    // SAFETY: a live stream (caller); `get_schema` fills the struct we pass and gives us its
    // ownership on success.
    unsafe { stream_call(stream, (*stream).get_schema, "get_schema", &mut *schema) }?;
    Ok(OwnedSchema(schema))
}

/// The next array of a stream, or `None` at its end.
///
/// # Safety
/// As [`stream_schema`].
pub(crate) unsafe fn stream_next(
    stream: *mut ArrowArrayStream,
) -> Result<Option<OwnedArray>, Error> {
    let mut array = Box::new(ArrowArray::empty());
    // SAFETY: a live stream (caller); `get_next` fills the struct and gives us its ownership,
    // or marks it released (release == NULL) at the end of the stream.
    unsafe { stream_call(stream, (*stream).get_next, "get_next", &mut *array) }?;
    if array.release.is_none() {
        return Ok(None);
    }
    Ok(Some(OwnedArray(array)))
}

/// The key type and value layout an Arrow format string describes.
enum Form {
    /// Fixed-width values of this many bytes (4 or 8, or N for fixed-size binary).
    Fixed(usize),
    /// Strings or binary with 32-bit offsets.
    Offsets32,
    /// Strings or binary with 64-bit offsets.
    Offsets64,
}

fn form_of(format: &str) -> Result<(KeyType, Form), Error> {
    let fixed = |t, w| Ok((t, Form::Fixed(w)));
    match format {
        "L" => fixed(KeyType::U64, 8),
        "l" => fixed(KeyType::I64, 8),
        "I" => fixed(KeyType::U32, 4),
        "i" => fixed(KeyType::I32, 4),
        "f" => fixed(KeyType::F32, 4),
        "g" => fixed(KeyType::F64, 8),
        "tdD" => fixed(KeyType::Date32, 4),
        "u" | "z" => Ok((KeyType::Bytes, Form::Offsets32)),
        "U" | "Z" => Ok((KeyType::Bytes, Form::Offsets64)),
        "vu" | "vz" => Err(Error::type_(
            "Arrow string_view/binary_view arrays are not supported: cast them to string or \
             large_string first (e.g. arr.cast(pyarrow.large_string()))",
        )),
        "tdm" => Err(Error::type_(
            "Arrow date64 arrays are not supported: cast them to date32 (Parquet DATE) first",
        )),
        _ => {
            if let Some(unit_tz) = format.strip_prefix("ts") {
                let t = match unit_tz.as_bytes().first() {
                    Some(b'm') => KeyType::TimestampMillis,
                    Some(b'u') => KeyType::TimestampMicros,
                    Some(b'n') => KeyType::TimestampNanos,
                    _ => {
                        return Err(Error::type_(format!(
                            "Arrow timestamp format {format:?}: only milli-, micro- and \
                             nanosecond timestamps have a Parquet key type; cast to \
                             timestamp('ms') first"
                        )))
                    }
                };
                return fixed(t, 8);
            }
            if let Some(w) = format.strip_prefix("w:") {
                let width: u16 = w.parse().ok().filter(|&w| w > 0).ok_or_else(|| {
                    Error::value(format!("bad fixed-size binary format {format:?}"))
                })?;
                return fixed(KeyType::FixedBytes(width), usize::from(width));
            }
            Err(Error::type_(format!(
                "unsupported Arrow type (format {format:?}): keys are uint64, int64, uint32, \
                 int32, float32, float64, date32, timestamp[ms|us|ns], string, large_string, \
                 binary, large_binary or fixed_size_binary arrays"
            )))
        }
    }
}

/// Reads the description of one array: its key type and pointers to its buffers.
///
/// # Safety
/// `schema` and `array` are live, unreleased structs that describe each other (their owner, a
/// capsule or an [`OwnedArray`], outlives every use of the returned pointers).
pub(crate) unsafe fn read_array(
    schema: &ArrowSchema,
    array: &ArrowArray,
) -> Result<(KeyType, RawPart), Error> {
    // SAFETY: a live schema (caller).
    let (format, key_type, form) = unsafe { read_schema(schema)? };
    // SAFETY: a live array described by `schema` (caller).
    unsafe { read_buffers(&format, key_type, form, array) }
}

/// The key type a schema describes.
///
/// # Safety
/// `schema` is a live, unreleased struct.
pub(crate) unsafe fn schema_key_type(schema: &ArrowSchema) -> Result<KeyType, Error> {
    // SAFETY: the caller's contract.
    unsafe { read_schema(schema) }.map(|(_, t, _)| t)
}

/// # Safety
/// `schema` is a live, unreleased struct.
unsafe fn read_schema(schema: &ArrowSchema) -> Result<(String, KeyType, Form), Error> {
    if schema.format.is_null() {
        return Err(Error::value("Arrow schema without a format string"));
    }
    // SAFETY: the format is a NUL-terminated string owned by the live schema (caller).
    let format = unsafe { CStr::from_ptr(schema.format) }
        .to_str()
        .map_err(|_| Error::value("Arrow format string is not UTF-8"))?;
    if !schema.dictionary.is_null() {
        return Err(Error::type_(
            "dictionary-encoded Arrow arrays are not supported: decode them first \
             (e.g. arr.dictionary_decode())",
        ));
    }
    let (key_type, form) = form_of(format)?;
    Ok((format.to_string(), key_type, form))
}

/// # Safety
/// As [`read_array`].
unsafe fn read_buffers(
    format: &str,
    key_type: KeyType,
    form: Form,
    array: &ArrowArray,
) -> Result<(KeyType, RawPart), Error> {
    let (Ok(len), Ok(offset)) = (usize::try_from(array.length), usize::try_from(array.offset))
    else {
        return Err(Error::value("Arrow array with a negative length or offset"));
    };
    let needed = match form {
        Form::Fixed(_) => 2,
        Form::Offsets32 | Form::Offsets64 => 3,
    };
    if array.n_buffers != needed || array.buffers.is_null() {
        return Err(Error::value(format!(
            "Arrow array of format {format:?} has {} buffers, expected {needed}",
            array.n_buffers
        )));
    }
    // SAFETY: `buffers` points to `n_buffers` (checked above) buffer pointers of the live array.
    let buf = |i: usize| unsafe { *array.buffers.add(i) };
    let validity = buf(0).cast::<u8>();
    let nulls = if array.null_count != 0 && !validity.is_null() {
        Some((validity, offset))
    } else {
        None
    };
    if len == 0 {
        return Ok((key_type, RawPart::empty()));
    }
    let values = match form {
        Form::Fixed(width) => {
            let base = buf(1).cast::<u8>();
            if base.is_null() {
                return Err(Error::value("Arrow array without a value buffer"));
            }
            // SAFETY: the value buffer of a fixed-width array holds `offset + length` values of
            // `width` bytes (C Data Interface); the pointer stays inside it.
            let p = unsafe { base.add(offset * width) };
            match (key_type, width) {
                (KeyType::FixedBytes(_), _) => RawValues::Records(p, len, width),
                (_, 8) => RawValues::U64(p.cast(), len),
                _ => RawValues::U32(p.cast(), len),
            }
        }
        Form::Offsets32 => {
            let offsets = buf(1).cast::<i32>();
            if offsets.is_null() {
                return Err(Error::value("Arrow string array without an offset buffer"));
            }
            // SAFETY: the offset buffer holds `offset + length + 1` entries (C Data Interface).
            let offsets = unsafe { offsets.add(offset) };
            RawValues::Str32(buf(2).cast(), offsets, len)
        }
        Form::Offsets64 => {
            let offsets = buf(1).cast::<i64>();
            if offsets.is_null() {
                return Err(Error::value("Arrow string array without an offset buffer"));
            }
            // SAFETY: as for 32-bit offsets.
            let offsets = unsafe { offsets.add(offset) };
            RawValues::Str64(buf(2).cast(), offsets.cast(), len)
        }
    };
    Ok((key_type, RawPart { values, nulls }))
}
