//! A small XML reader for checking the pictures this module draws: it parses a document into
//! elements (names, attributes, text) and refuses one that is not well-formed (unbalanced or
//! mismatched tags, a duplicate attribute, an unquoted value, a bare `<` or `&`, an unknown
//! entity, text outside the root). Enough for the SVG [`super::render_svg`] writes and for
//! tests that count its lanes and marks; not a general XML parser (no DTDs).
//!
//! Layer: logs, the bottom layer.

/// One element: its name, attributes in document order, child elements, and its text (the
/// character data directly inside it, entities decoded).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Element {
    pub name: String,
    pub attrs: Vec<(String, String)>,
    pub children: Vec<Element>,
    pub text: String,
}

impl Element {
    /// The value of attribute `name`.
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// This element and every element under it, in document order.
    pub fn descendants(&self) -> Vec<&Element> {
        let mut out = vec![self];
        let mut i = 0;
        while i < out.len() {
            let e = out[i];
            out.extend(e.children.iter());
            i += 1;
        }
        out
    }
}

/// Parses `doc` (an optional `<?xml …?>` declaration, comments, one root element).
pub fn parse(doc: &str) -> Result<Element, String> {
    let mut p = Parser {
        s: doc.as_bytes(),
        i: 0,
    };
    p.misc()?;
    if p.peek() != Some(b'<') {
        return Err(p.error("expected the root element"));
    }
    let root = p.element(0)?;
    p.misc()?;
    if p.i < p.s.len() {
        return Err(p.error("content after the root element"));
    }
    Ok(root)
}

/// Deepest nesting accepted (the pictures are shallow; this bounds the recursion).
const MAX_DEPTH: usize = 64;

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn starts(&self, what: &str) -> bool {
        self.s[self.i..].starts_with(what.as_bytes())
    }

    fn error(&self, what: &str) -> String {
        let line = self.s[..self.i.min(self.s.len())]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        format!("{what} at byte {} (line {line})", self.i)
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.i += 1;
        }
    }

    /// Skips past `end`, or fails.
    fn skip_past(&mut self, end: &str, what: &str) -> Result<(), String> {
        match find(&self.s[self.i..], end.as_bytes()) {
            Some(at) => {
                self.i += at + end.len();
                Ok(())
            }
            None => Err(self.error(&format!("unterminated {what}"))),
        }
    }

    /// Whitespace, comments and processing instructions outside the root.
    fn misc(&mut self) -> Result<(), String> {
        loop {
            self.skip_ws();
            if self.starts("<?") {
                self.skip_past("?>", "processing instruction")?;
            } else if self.starts("<!--") {
                self.skip_past("-->", "comment")?;
            } else {
                return Ok(());
            }
        }
    }

    fn name(&mut self) -> Result<String, String> {
        let start = self.i;
        while let Some(b) = self.peek() {
            let ok = b.is_ascii_alphanumeric() || matches!(b, b'_' | b':' | b'-' | b'.') || b >= 0x80;
            if !ok {
                break;
            }
            self.i += 1;
        }
        if start == self.i || self.s[start].is_ascii_digit() || matches!(self.s[start], b'-' | b'.') {
            return Err(self.error("expected a name"));
        }
        Ok(String::from_utf8_lossy(&self.s[start..self.i]).into_owned())
    }

    fn element(&mut self, depth: usize) -> Result<Element, String> {
        if depth > MAX_DEPTH {
            return Err(self.error("elements nested too deep"));
        }
        self.i += 1; // '<'
        let mut e = Element {
            name: self.name()?,
            ..Element::default()
        };
        loop {
            let before = self.i;
            self.skip_ws();
            match self.peek() {
                Some(b'/') => {
                    if !self.starts("/>") {
                        return Err(self.error("expected '/>'"));
                    }
                    self.i += 2;
                    return Ok(e);
                }
                Some(b'>') => {
                    self.i += 1;
                    break;
                }
                Some(_) if before == self.i => {
                    return Err(self.error("expected whitespace before an attribute"))
                }
                Some(_) => {
                    let key = self.name()?;
                    self.skip_ws();
                    if self.peek() != Some(b'=') {
                        return Err(self.error(&format!("attribute {key} has no value")));
                    }
                    self.i += 1;
                    self.skip_ws();
                    let quote = match self.peek() {
                        Some(q @ (b'"' | b'\'')) => q,
                        _ => return Err(self.error(&format!("attribute {key}'s value is not quoted"))),
                    };
                    self.i += 1;
                    let start = self.i;
                    while self.peek().is_some_and(|b| b != quote) {
                        if self.peek() == Some(b'<') {
                            return Err(self.error("'<' in an attribute value"));
                        }
                        self.i += 1;
                    }
                    if self.peek().is_none() {
                        return Err(self.error("unterminated attribute value"));
                    }
                    let value = self.decode(start, self.i)?;
                    self.i += 1;
                    if e.attr(&key).is_some() {
                        return Err(self.error(&format!("duplicate attribute {key}")));
                    }
                    e.attrs.push((key, value));
                }
                None => return Err(self.error(&format!("unterminated tag <{}", e.name))),
            }
        }
        // Content.
        loop {
            let start = self.i;
            while self.peek().is_some_and(|b| b != b'<') {
                self.i += 1;
            }
            let text = self.decode(start, self.i)?;
            e.text.push_str(&text);
            if self.peek().is_none() {
                return Err(self.error(&format!("element <{}> is not closed", e.name)));
            }
            if self.starts("</") {
                self.i += 2;
                let name = self.name()?;
                if name != e.name {
                    return Err(self.error(&format!("</{name}> closes <{}>", e.name)));
                }
                self.skip_ws();
                if self.peek() != Some(b'>') {
                    return Err(self.error("expected '>'"));
                }
                self.i += 1;
                return Ok(e);
            } else if self.starts("<!--") {
                self.skip_past("-->", "comment")?;
            } else if self.starts("<![CDATA[") {
                let from = self.i + 9;
                self.skip_past("]]>", "CDATA section")?;
                e.text
                    .push_str(&String::from_utf8_lossy(&self.s[from..self.i - 3]));
            } else if self.starts("<?") {
                self.skip_past("?>", "processing instruction")?;
            } else {
                let child = self.element(depth + 1)?;
                e.children.push(child);
            }
        }
    }

    /// The text of `s[from..to]` with its entities decoded.
    fn decode(&self, from: usize, to: usize) -> Result<String, String> {
        let raw = std::str::from_utf8(&self.s[from..to]).map_err(|_| self.error("invalid UTF-8"))?;
        let mut out = String::with_capacity(raw.len());
        let mut rest = raw;
        while let Some(at) = rest.find('&') {
            out.push_str(&rest[..at]);
            let after = &rest[at + 1..];
            let Some(end) = after.find(';') else {
                return Err(self.error("a bare '&'"));
            };
            let entity = &after[..end];
            let c = match entity {
                "lt" => '<',
                "gt" => '>',
                "amp" => '&',
                "quot" => '"',
                "apos" => '\'',
                _ => {
                    let code = if let Some(hex) = entity.strip_prefix("#x") {
                        u32::from_str_radix(hex, 16).ok()
                    } else if let Some(dec) = entity.strip_prefix('#') {
                        dec.parse().ok()
                    } else {
                        None
                    };
                    code.and_then(char::from_u32)
                        .ok_or_else(|| self.error(&format!("unknown entity &{entity};")))?
                }
            };
            out.push(c);
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_well_formed_document_parses_into_elements() {
        let doc = parse(
            "<?xml version=\"1.0\"?>\n<!-- c --><svg a=\"1\" b='x &amp; y'><g class=\"lane\"><title>t &lt;1&gt;</title></g><rect/></svg>\n",
        )
        .unwrap();
        assert_eq!(doc.name, "svg");
        assert_eq!(doc.attr("b"), Some("x & y"));
        assert_eq!(doc.children.len(), 2);
        assert_eq!(doc.children[0].children[0].text, "t <1>");
        assert_eq!(doc.descendants().len(), 4);
    }

    #[test]
    fn what_is_not_well_formed_is_refused() {
        for bad in [
            "<svg>",
            "<svg></g>",
            "<svg><g></svg>",
            "<svg a=1/>",
            "<svg a=\"1\" a=\"2\"/>",
            "<svg>a & b</svg>",
            "<svg>&nbsp;</svg>",
            "<svg a=\"<\"/>",
            "<svg/><svg/>",
            "text<svg/>",
            "<svg a=\"1\"b=\"2\"/>",
        ] {
            assert!(parse(bad).is_err(), "{bad} should be refused");
        }
    }
}
