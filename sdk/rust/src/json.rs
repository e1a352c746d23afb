//! A small JSON reader for args and objects: zero-copy, no allocation, no recursion.
//!
//! It trusts its input to be JSON, as the host's args, objects and requests are: it finds
//! values by skipping over others without validating them, and returns `None` (never
//! panics) where the input does not have the expected shape.
//!
//! ```ignore
//! let v = json::parse(doc)?;                               // one JSON value
//! let zone = v.path(&["metadata", "labels", "zone"])?.as_str()?;
//! for item in v.get("labels")?.items() { /* ... */ }
//! ```

/// The type of a JSON value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// null
    Null,
    /// true or false
    Bool,
    /// a number
    Number,
    /// a string
    String,
    /// an array
    Array,
    /// an object
    Object,
}

/// One JSON value, borrowed from the document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Value<'a> {
    raw: &'a [u8],
}

/// Parses a document holding one JSON value (surrounding whitespace allowed).
pub fn parse(doc: &[u8]) -> Option<Value<'_>> {
    let s = skip_ws(doc, 0);
    let e = skip_value(doc, s)?;
    if skip_ws(doc, e) != doc.len() {
        return None;
    }
    Some(Value { raw: &doc[s..e] })
}

impl<'a> Value<'a> {
    /// The value's text, as in the document.
    pub fn raw(&self) -> &'a [u8] {
        self.raw
    }
    /// The value's type.
    pub fn kind(&self) -> Kind {
        match self.raw.first() {
            Some(b'{') => Kind::Object,
            Some(b'[') => Kind::Array,
            Some(b'"') => Kind::String,
            Some(b't') | Some(b'f') => Kind::Bool,
            Some(b'n') | None => Kind::Null,
            _ => Kind::Number,
        }
    }
    /// Whether the value is `null`.
    pub fn is_null(&self) -> bool {
        self.kind() == Kind::Null
    }
    /// The member `key` of an object (the first, if repeated).
    pub fn get(&self, key: &str) -> Option<Value<'a>> {
        self.members().find(|(k, _)| *k == *key).map(|(_, v)| v)
    }
    /// Follows object keys: `path(&["metadata", "labels", "app"])`.
    pub fn path(&self, keys: &[&str]) -> Option<Value<'a>> {
        let mut v = *self;
        for k in keys {
            v = v.get(k)?;
        }
        Some(v)
    }
    /// The members of an object (nothing for other types).
    pub fn members(&self) -> Members<'a> {
        let pos = if self.kind() == Kind::Object { 1 } else { self.raw.len() };
        Members { raw: self.raw, pos }
    }
    /// The elements of an array (nothing for other types).
    pub fn items(&self) -> Items<'a> {
        let pos = if self.kind() == Kind::Array { 1 } else { self.raw.len() };
        Items { raw: self.raw, pos }
    }
    /// Element i of an array.
    pub fn at(&self, i: usize) -> Option<Value<'a>> {
        self.items().nth(i)
    }
    /// A string value.
    pub fn as_str(&self) -> Option<Str<'a>> {
        if self.kind() != Kind::String || self.raw.len() < 2 {
            return None;
        }
        Some(Str { raw: &self.raw[1..self.raw.len() - 1] })
    }
    /// A boolean value.
    pub fn as_bool(&self) -> Option<bool> {
        match self.raw {
            b"true" => Some(true),
            b"false" => Some(false),
            _ => None,
        }
    }
    /// An integer value (`None` for fractions, exponents and out-of-range numbers).
    pub fn as_i64(&self) -> Option<i64> {
        if self.kind() != Kind::Number {
            return None;
        }
        core::str::from_utf8(self.raw).ok()?.parse().ok()
    }
    /// A number value.
    pub fn as_f64(&self) -> Option<f64> {
        if self.kind() != Kind::Number {
            return None;
        }
        core::str::from_utf8(self.raw).ok()?.parse().ok()
    }
}

/// A JSON string's contents, still escaped as in the document. Compare it with `==`
/// against a `&str`, or decode it.
#[derive(Clone, Copy, Debug)]
pub struct Str<'a> {
    raw: &'a [u8],
}

impl<'a> Str<'a> {
    /// The string without copying, when it has no escapes (most keys and values).
    pub fn as_plain(&self) -> Option<&'a str> {
        if self.raw.contains(&b'\\') {
            return None;
        }
        core::str::from_utf8(self.raw).ok()
    }
    /// The string decoded into `buf`; `None` when it does not fit.
    pub fn decode<'b>(&self, buf: &'b mut [u8]) -> Option<&'b str> {
        let mut n = 0;
        for b in self.bytes() {
            *buf.get_mut(n)? = b;
            n += 1;
        }
        core::str::from_utf8(&buf[..n]).ok()
    }
    /// The decoded bytes (escapes resolved, `\u` as UTF-8).
    pub fn bytes(&self) -> Unescape<'a> {
        Unescape { raw: self.raw, pos: 0, pending: [0; 4], npending: 0, next: 0 }
    }
    /// The decoded length in bytes.
    pub fn len(&self) -> usize {
        self.bytes().count()
    }
    /// Whether the string is empty.
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }
}

impl PartialEq<str> for Str<'_> {
    fn eq(&self, s: &str) -> bool {
        match self.as_plain() {
            Some(p) => p == s,
            None => self.bytes().eq(s.bytes()),
        }
    }
}

impl PartialEq<&str> for Str<'_> {
    fn eq(&self, s: &&str) -> bool {
        *self == **s
    }
}

/// The decoded bytes of a JSON string.
pub struct Unescape<'a> {
    raw: &'a [u8],
    pos: usize,
    pending: [u8; 4],
    npending: u8,
    next: u8,
}

fn hex4(b: &[u8]) -> Option<u32> {
    let mut v = 0u32;
    for &c in b.get(..4)? {
        v = v * 16 + (c as char).to_digit(16)?;
    }
    Some(v)
}

impl Iterator for Unescape<'_> {
    type Item = u8;
    fn next(&mut self) -> Option<u8> {
        if self.next < self.npending {
            self.next += 1;
            return Some(self.pending[self.next as usize - 1]);
        }
        let c = *self.raw.get(self.pos)?;
        if c != b'\\' {
            self.pos += 1;
            return Some(c);
        }
        let e = *self.raw.get(self.pos + 1)?;
        self.pos += 2;
        let simple = match e {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 8,
            b'f' => 12,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => 0,
            _ => return None,
        };
        if e != b'u' {
            return Some(simple);
        }
        let mut cp = hex4(&self.raw[self.pos..]).unwrap_or(0xFFFD);
        self.pos += 4;
        if (0xD800..0xDC00).contains(&cp) && self.raw.get(self.pos..self.pos + 2) == Some(b"\\u") {
            if let Some(lo) = hex4(&self.raw[self.pos + 2..]) {
                if (0xDC00..0xE000).contains(&lo) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    self.pos += 6;
                }
            }
        }
        let ch = char::from_u32(cp).unwrap_or('\u{FFFD}');
        let n = ch.encode_utf8(&mut self.pending).len();
        self.npending = n as u8;
        self.next = 1;
        Some(self.pending[0])
    }
}

/// The members of an object.
pub struct Members<'a> {
    raw: &'a [u8],
    pos: usize,
}

impl<'a> Iterator for Members<'a> {
    type Item = (Str<'a>, Value<'a>);
    fn next(&mut self) -> Option<Self::Item> {
        let b = self.raw;
        let mut i = skip_ws(b, self.pos);
        if b.get(i) == Some(&b',') {
            i = skip_ws(b, i + 1);
        }
        if b.get(i) != Some(&b'"') {
            self.pos = b.len();
            return None;
        }
        let kend = skip_string(b, i)?;
        let key = Str { raw: &b[i + 1..kend - 1] };
        i = skip_ws(b, kend);
        if b.get(i) != Some(&b':') {
            self.pos = b.len();
            return None;
        }
        let vs = skip_ws(b, i + 1);
        let ve = skip_value(b, vs)?;
        self.pos = ve;
        Some((key, Value { raw: &b[vs..ve] }))
    }
}

/// The elements of an array.
pub struct Items<'a> {
    raw: &'a [u8],
    pos: usize,
}

impl<'a> Iterator for Items<'a> {
    type Item = Value<'a>;
    fn next(&mut self) -> Option<Value<'a>> {
        let b = self.raw;
        let mut i = skip_ws(b, self.pos);
        if b.get(i) == Some(&b',') {
            i = skip_ws(b, i + 1);
        }
        match b.get(i) {
            None | Some(b']') => {
                self.pos = b.len();
                return None;
            }
            _ => {}
        }
        let e = match skip_value(b, i) {
            Some(e) => e,
            None => {
                self.pos = b.len();
                return None;
            }
        };
        self.pos = e;
        Some(Value { raw: &b[i..e] })
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

fn skip_string(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        match *b.get(j)? {
            b'"' => return Some(j + 1),
            b'\\' => j += 2,
            _ => j += 1,
        }
    }
}

fn skip_value(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => skip_string(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match *b.get(j)? {
                    b'"' => {
                        j = skip_string(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        b't' => literal(b, i, b"true"),
        b'f' => literal(b, i, b"false"),
        b'n' => literal(b, i, b"null"),
        b'-' | b'0'..=b'9' => {
            let mut j = i + 1;
            while matches!(b.get(j), Some(b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')) {
                j += 1;
            }
            Some(j)
        }
        _ => None,
    }
}

fn literal(b: &[u8], i: usize, lit: &[u8]) -> Option<usize> {
    if b.get(i..i + lit.len())? == lit {
        Some(i + lit.len())
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_values_by_path() {
        let doc = br#" {"metadata": {"name": "web", "labels": {"app": "shop", "x": [1, {"y": "}"}]}},
                      "n": -12, "f": 1.5e2, "t": true, "z": null, "s": "a\"b\\c\u00e9\ud83d\ude00"} "#;
        let v = parse(doc).unwrap();
        assert_eq!(v.kind(), Kind::Object);
        assert!(v.path(&["metadata", "labels", "app"]).unwrap().as_str().unwrap() == "shop");
        assert!(v.path(&["metadata", "labels", "nope"]).is_none());
        assert_eq!(v.get("n").unwrap().as_i64(), Some(-12));
        assert_eq!(v.get("f").unwrap().as_f64(), Some(150.0));
        assert_eq!(v.get("f").unwrap().as_i64(), None);
        assert_eq!(v.get("t").unwrap().as_bool(), Some(true));
        assert!(v.get("z").unwrap().is_null());
        let s = v.get("s").unwrap().as_str().unwrap();
        assert!(s.as_plain().is_none());
        assert!(s == "a\"b\\cé😀");
        let mut buf = [0u8; 32];
        assert_eq!(s.decode(&mut buf), Some("a\"b\\cé😀"));
        assert_eq!(s.decode(&mut buf[..3]), None);
        let x = v.path(&["metadata", "labels", "x"]).unwrap();
        assert_eq!(x.items().count(), 2);
        assert!(x.at(1).unwrap().get("y").unwrap().as_str().unwrap() == "}");
        assert_eq!(v.members().count(), 6);
    }

    #[test]
    fn rejects_what_is_not_one_value() {
        for bad in [&b""[..], b"{", b"[1,", b"\"abc", b"{} {}", b"tru", b"x"] {
            assert!(parse(bad).is_none(), "{:?}", core::str::from_utf8(bad));
        }
        assert_eq!(parse(b"[]").unwrap().items().count(), 0);
        assert_eq!(parse(b"{}").unwrap().members().count(), 0);
        // A malformed member ends the iteration instead of panicking.
        assert_eq!(parse(b"[{\"a\" 1}]").unwrap().at(0).unwrap().members().count(), 0);
    }
}
