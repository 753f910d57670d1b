//! The byte encoding of values that ranks exchange: little-endian integers, length-prefixed
//! strings and byte strings. Decoding never panics: a short or malformed message is an
//! [`Error::Protocol`].

use iris_driver::{Error, Result};

/// Appends values to a message.
#[derive(Debug, Default)]
pub(crate) struct Writer {
    bytes: Vec<u8>,
}

impl Writer {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn u8(&mut self, v: u8) -> &mut Self {
        self.bytes.push(v);
        self
    }

    pub(crate) fn u64(&mut self, v: u64) -> &mut Self {
        self.bytes.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub(crate) fn usize(&mut self, v: usize) -> &mut Self {
        self.u64(v as u64)
    }

    pub(crate) fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.usize(v.len());
        self.bytes.extend_from_slice(v);
        self
    }

    pub(crate) fn str(&mut self, v: &str) -> &mut Self {
        self.bytes(v.as_bytes())
    }

    pub(crate) fn finish(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.bytes)
    }
}

/// Reads values back, in the order they were written.
#[derive(Debug)]
pub(crate) struct Reader<'a> {
    what: &'a str,
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    /// A reader of `bytes`, a message described by `what` in errors.
    pub(crate) fn new(what: &'a str, bytes: &'a [u8]) -> Self {
        Self { what, rest: bytes }
    }

    fn error(&self, reason: String) -> Error {
        Error::Protocol {
            what: self.what.to_string(),
            reason,
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.rest.len() < n {
            return Err(self.error(format!("{n} more bytes expected, {} left", self.rest.len())));
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    pub(crate) fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    pub(crate) fn u64(&mut self) -> Result<u64> {
        let mut word = [0u8; 8];
        word.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(word))
    }

    pub(crate) fn usize(&mut self) -> Result<usize> {
        let v = self.u64()?;
        usize::try_from(v).map_err(|_| self.error(format!("{v} does not fit a usize")))
    }

    pub(crate) fn bytes(&mut self) -> Result<&'a [u8]> {
        let n = self.usize()?;
        self.take(n)
    }

    pub(crate) fn string(&mut self) -> Result<String> {
        let raw = self.bytes()?;
        String::from_utf8(raw.to_vec()).map_err(|_| self.error("a string is not UTF-8".into()))
    }

    /// Checks that the whole message was read.
    pub(crate) fn end(&self) -> Result<()> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(self.error(format!("{} trailing bytes", self.rest.len())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_truncation() {
        let msg = Writer::new()
            .u8(7)
            .u64(u64::MAX)
            .str("héllo")
            .bytes(&[1, 2, 3])
            .finish();
        let mut r = Reader::new("test", &msg);
        assert_eq!(r.u8().unwrap(), 7);
        assert_eq!(r.u64().unwrap(), u64::MAX);
        assert_eq!(r.string().unwrap(), "héllo");
        assert_eq!(r.bytes().unwrap(), &[1, 2, 3]);
        r.end().unwrap();
        for cut in 0..msg.len() {
            let mut r = Reader::new("test", &msg[..cut]);
            let all = (|| {
                r.u8()?;
                r.u64()?;
                r.string()?;
                r.bytes()?;
                Ok::<_, Error>(())
            })();
            assert!(matches!(all, Err(Error::Protocol { .. })), "cut at {cut}");
        }
        let mut r = Reader::new("test", &[0xff; 8]);
        assert!(
            r.bytes().is_err(),
            "a huge length is an error, not an allocation"
        );
    }
}
