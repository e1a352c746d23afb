//! Reading variable-size values: the `(buf, cap)` rule of docs/abi.md section 2.

use core::fmt;

/// Why a read returned no value. `NOT_FOUND` (-1) is not an error where absence is normal
/// (labels, annotations, state keys): those reads return `Ok(None)` instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// -1: the value does not exist.
    NotFound,
    /// -2: the data is not part of this call (a node index outside the batch, node data in
    /// PreFilter, an admission request without an object, a kind without cycle state).
    Unavailable,
    /// -3: the plugin's config does not grant the read (`get_object` of a resource not in
    /// `capabilities`).
    Forbidden,
    /// The value is this many bytes and the buffer is smaller and cannot grow: pass a
    /// buffer of at least that size (the value does not change during the call).
    TooSmall(usize),
    /// The host returned text that is not UTF-8 (a host bug: the ABI's strings are UTF-8).
    InvalidUtf8,
    /// A negative result the ABI does not define.
    Code(i32),
}

impl Error {
    /// Maps a negative host result to its error.
    pub fn from_code(n: i32) -> Error {
        match n {
            -1 => Error::NotFound,
            -2 => Error::Unavailable,
            -3 => Error::Forbidden,
            n => Error::Code(n),
        }
    }

    /// A short description, fit for a status reason.
    pub fn as_str(&self) -> &'static str {
        match self {
            Error::NotFound => "not found",
            Error::Unavailable => "not available in this call",
            Error::Forbidden => "forbidden by the plugin's config",
            Error::TooSmall(_) => "value larger than the buffer",
            Error::InvalidUtf8 => "host returned invalid UTF-8",
            Error::Code(_) => "unknown host result",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::TooSmall(n) => write!(f, "value is {} bytes, larger than the buffer", n),
            Error::Code(n) => write!(f, "unknown host result {}", n),
            e => f.write_str(e.as_str()),
        }
    }
}

/// Where the host writes a variable-size value. Implemented by byte arrays and slices
/// (fixed: a value longer than the buffer is `Error::TooSmall(len)`), by [`FixedBuf`]
/// (which remembers the length, for values kept in a global), and with the `alloc`
/// feature by `Vec<u8>` (which grows and asks again, as section 2 says).
pub trait Buffer {
    /// The writable region: pointer and capacity in bytes.
    fn space(&mut self) -> (*mut u8, usize);
    /// Makes room for at least `n` bytes; false when the buffer cannot grow.
    fn reserve(&mut self, _n: usize) -> bool {
        false
    }
    /// The first `n` bytes, after the host wrote them (`n` is at most the capacity).
    fn filled(&mut self, n: usize) -> &[u8];
}

impl Buffer for [u8] {
    fn space(&mut self) -> (*mut u8, usize) {
        (self.as_mut_ptr(), self.len())
    }
    fn filled(&mut self, n: usize) -> &[u8] {
        &self[..n]
    }
}

impl<const N: usize> Buffer for [u8; N] {
    fn space(&mut self) -> (*mut u8, usize) {
        (self.as_mut_ptr(), N)
    }
    fn filled(&mut self, n: usize) -> &[u8] {
        &self[..n]
    }
}

#[cfg(feature = "alloc")]
impl Buffer for alloc::vec::Vec<u8> {
    fn space(&mut self) -> (*mut u8, usize) {
        self.clear();
        (self.as_mut_ptr(), self.capacity())
    }
    fn reserve(&mut self, n: usize) -> bool {
        self.clear();
        self.reserve_exact(n);
        true
    }
    fn filled(&mut self, n: usize) -> &[u8] {
        // SAFETY: the host wrote n <= capacity bytes at the vector's pointer.
        unsafe { self.set_len(n) };
        &self[..]
    }
}

/// A fixed-capacity byte buffer that remembers how much was read into it: a value (the
/// args, say) kept in a global for the instance's life. `const`-constructible.
pub struct FixedBuf<const N: usize> {
    buf: [u8; N],
    len: usize,
}

impl<const N: usize> FixedBuf<N> {
    /// An empty buffer.
    pub const fn new() -> Self {
        FixedBuf { buf: [0; N], len: 0 }
    }
    /// The bytes last read into the buffer.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl<const N: usize> Default for FixedBuf<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Buffer for FixedBuf<N> {
    fn space(&mut self) -> (*mut u8, usize) {
        self.len = 0;
        (self.buf.as_mut_ptr(), N)
    }
    fn filled(&mut self, n: usize) -> &[u8] {
        self.len = n;
        &self.buf[..n]
    }
}

/// A fixed-capacity string that `write!` formats into without allocating; what does not
/// fit is cut at a character boundary. Used for formatted status reasons and log lines,
/// and handy for building a JSON Patch.
#[derive(Clone)]
pub struct StrBuf<const N: usize> {
    buf: [u8; N],
    len: usize,
}

impl<const N: usize> StrBuf<N> {
    /// An empty string.
    pub const fn new() -> Self {
        StrBuf { buf: [0; N], len: 0 }
    }
    /// The text written so far.
    pub fn as_str(&self) -> &str {
        // SAFETY: only whole characters of &str values are ever copied in.
        unsafe { core::str::from_utf8_unchecked(&self.buf[..self.len]) }
    }
    /// Appends as much of s as fits, cut at a character boundary; false when cut.
    pub fn push_str(&mut self, s: &str) -> bool {
        let room = N - self.len;
        let mut n = s.len().min(room);
        while !s.is_char_boundary(n) {
            n -= 1;
        }
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        n == s.len()
    }
    /// Empties the string.
    pub fn clear(&mut self) {
        self.len = 0;
    }
    /// Whether the string is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<const N: usize> Default for StrBuf<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> fmt::Write for StrBuf<N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        // Truncation is not an error: a cut reason is better than none.
        self.push_str(s);
        Ok(())
    }
}

fn cap32(c: usize) -> i32 {
    if c > i32::MAX as usize {
        i32::MAX
    } else {
        c as i32
    }
}

/// Runs a host read with the section 2 rule: write into `buf`; when the host reports a
/// longer value, grow the buffer if it can and ask once more.
pub(crate) fn read<'b, B: Buffer + ?Sized>(buf: &'b mut B, mut fill: impl FnMut(*mut u8, i32) -> i32) -> Result<&'b [u8], Error> {
    let (p, c) = buf.space();
    let c = cap32(c);
    let n = fill(p, c);
    if n < 0 {
        return Err(Error::from_code(n));
    }
    if n <= c {
        return Ok(buf.filled(n as usize));
    }
    if !buf.reserve(n as usize) {
        return Err(Error::TooSmall(n as usize));
    }
    let (p, c) = buf.space();
    let c = cap32(c);
    let n = fill(p, c);
    if n < 0 {
        return Err(Error::from_code(n));
    }
    if n > c {
        // The ABI promises a value does not change during a call; never loop on a host
        // that breaks the promise.
        return Err(Error::TooSmall(n as usize));
    }
    Ok(buf.filled(n as usize))
}

/// `read`, as UTF-8 text.
pub(crate) fn read_str<'b, B: Buffer + ?Sized>(buf: &'b mut B, fill: impl FnMut(*mut u8, i32) -> i32) -> Result<&'b str, Error> {
    let b = read(buf, fill)?;
    core::str::from_utf8(b).map_err(|_| Error::InvalidUtf8)
}

/// `read_str` where NOT_FOUND is an absent value, not an error.
pub(crate) fn lookup_str<'b, B: Buffer + ?Sized>(buf: &'b mut B, fill: impl FnMut(*mut u8, i32) -> i32) -> Result<Option<&'b str>, Error> {
    match read_str(buf, fill) {
        Ok(s) => Ok(Some(s)),
        Err(Error::NotFound) => Ok(None),
        Err(e) => Err(e),
    }
}

/// `read` where NOT_FOUND is an absent value, not an error.
pub(crate) fn lookup<'b, B: Buffer + ?Sized>(buf: &'b mut B, fill: impl FnMut(*mut u8, i32) -> i32) -> Result<Option<&'b [u8]>, Error> {
    match read(buf, fill) {
        Ok(s) => Ok(Some(s)),
        Err(Error::NotFound) => Ok(None),
        Err(e) => Err(e),
    }
}

/// A `(ptr, len)` pair for an input string.
pub(crate) fn arg(s: &[u8]) -> (*const u8, i32) {
    (s.as_ptr(), cap32(s.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    // A fake host read: a value of len bytes of 'x', or a negative code.
    fn host(value: i32) -> impl FnMut(*mut u8, i32) -> i32 {
        move |p, c| {
            if value >= 0 && value <= c {
                unsafe { core::ptr::write_bytes(p, b'x', value as usize) };
            }
            value
        }
    }

    #[test]
    fn follows_the_buffer_rule() {
        let mut small = [0u8; 4];
        assert_eq!(read(&mut small, host(3)), Ok(&b"xxx"[..]));
        assert_eq!(read(&mut small, host(5)), Err(Error::TooSmall(5)));
        assert_eq!(read(&mut small[..0], host(5)), Err(Error::TooSmall(5)));
        assert_eq!(read(&mut small, host(-1)), Err(Error::NotFound));
        assert_eq!(lookup(&mut small, host(-1)), Ok(None));
        assert_eq!(lookup(&mut small, host(-2)), Err(Error::Unavailable));
        assert_eq!(read(&mut small, host(-3)), Err(Error::Forbidden));
        let mut kept = FixedBuf::<8>::new();
        assert_eq!(read(&mut kept, host(6)).map(|b| b.len()), Ok(6));
        assert_eq!(kept.as_bytes(), b"xxxxxx");
    }

    #[test]
    fn strbuf_cuts_at_a_char_boundary() {
        let mut s = StrBuf::<4>::new();
        assert!(!s.push_str("abcé!"));
        assert_eq!(s.as_str(), "abc");
        use core::fmt::Write;
        let mut r = StrBuf::<8>::new();
        let _ = write!(r, "{}-{}", 12, "three");
        assert_eq!(r.as_str(), "12-three");
    }
}
