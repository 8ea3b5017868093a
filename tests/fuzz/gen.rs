//! Inputs for the wire fuzzing harness: a small seeded generator, random values of any
//! deserializable type (so every message starts from a valid encoding of itself), and the
//! mutations applied to valid encodings.
#![allow(dead_code)]

use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, Visitor};

/// SplitMix64: small, fast and good enough to pick inputs (not for anything secret).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
    /// A number biased to the edges: small, near a power of two, or extreme.
    pub fn interesting_u64(&mut self) -> u64 {
        match self.below(6) {
            0 => self.below(4) as u64,
            1 => self.below(256) as u64,
            2 => u64::MAX - self.below(2) as u64,
            3 => (1u64 << self.below(64))
                .wrapping_add(self.below(3) as u64)
                .wrapping_sub(1),
            4 => self.below(100_000) as u64,
            _ => self.next(),
        }
    }
}

// ------------------------------------------------------------------ random typed values

/// A random value of `T`, or `None` when none came out in a few tries (a type whose
/// `Deserialize` checks more than its shape: a path, an id parsed from text).
pub fn random_value<T: DeserializeOwned>(rng: &mut Rng) -> Option<T> {
    for _ in 0..16 {
        let mut de = RandomDe { rng, depth: 0 };
        if let Ok(v) = T::deserialize(&mut de) {
            return Some(v);
        }
    }
    None
}

/// A deserializer that makes up what it is asked for.
struct RandomDe<'a> {
    rng: &'a mut Rng,
    depth: usize,
}

#[derive(Debug)]
struct GenError(String);

impl std::fmt::Display for GenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for GenError {}
impl de::Error for GenError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        GenError(msg.to_string())
    }
}

const WORDS: &[&str] = &[
    "",
    "/node",
    "/node/rm",
    "/node/nm-host1",
    "host1",
    "127.0.0.1:1",
    "application_1700000000000_0001",
    "container_1700000000000_0001_01_000001",
    "appattempt_1700000000000_0001_000001",
    "1",
    "driver",
    "default",
    "spark.executor.memory",
    "1g",
    "sparkyard",
    "x",
];

impl RandomDe<'_> {
    fn string(&mut self) -> String {
        match self.rng.below(4) {
            0 => {
                let n = self.rng.below(12);
                (0..n)
                    .map(|_| (b'a' + self.rng.below(26) as u8) as char)
                    .collect()
            }
            1 => {
                let n = self.rng.below(8);
                String::from_utf8_lossy(&self.rng.bytes(n)).into_owned()
            }
            _ => WORDS[self.rng.below(WORDS.len())].to_string(),
        }
    }
    fn len(&mut self) -> usize {
        if self.depth > 4 {
            0
        } else {
            self.rng.below(4)
        }
    }
    fn nested(&mut self) -> RandomDe<'_> {
        RandomDe {
            rng: self.rng,
            depth: self.depth + 1,
        }
    }
}

macro_rules! int {
    ($name:ident, $visit:ident, $t:ty) => {
        fn $name<V: Visitor<'de>>(self, v: V) -> Result<V::Value, GenError> {
            v.$visit(self.rng.interesting_u64() as $t)
        }
    };
}

impl<'de> de::Deserializer<'de> for &mut RandomDe<'_> {
    type Error = GenError;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, GenError> {
        match self.rng.below(5) {
            0 => v.visit_unit(),
            1 => v.visit_bool(self.rng.chance(2)),
            2 => v.visit_u64(self.rng.interesting_u64()),
            3 => v.visit_string(self.string()),
            _ => v.visit_i64(self.rng.interesting_u64() as i64),
        }
    }
    fn deserialize_bool<V: Visitor<'de>>(self, v: V) -> Result<V::Value, GenError> {
        v.visit_bool(self.rng.chance(2))
    }
    int!(deserialize_i8, visit_i8, i8);
    int!(deserialize_i16, visit_i16, i16);
    int!(deserialize_i32, visit_i32, i32);
    int!(deserialize_i64, visit_i64, i64);
    int!(deserialize_u8, visit_u8, u8);
    int!(deserialize_u16, visit_u16, u16);
    int!(deserialize_u32, visit_u32, u32);
    int!(deserialize_u64, visit_u64, u64);
    fn deserialize_f32<V: Visitor<'de>>(self, v: V) -> Result<V::Value, GenError> {
        v.visit_f32(self.rng.below(1000) as f32 / 7.0)
    }
    fn deserialize_f64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, GenError> {
        let x = match self.rng.below(5) {
            0 => f64::NAN,
            1 => f64::INFINITY,
            2 => -1.0,
            _ => self.rng.below(1000) as f64 / 7.0,
        };
        v.visit_f64(x)
    }
    fn deserialize_char<V: Visitor<'de>>(self, v: V) -> Result<V::Value, GenError> {
        v.visit_char((b'a' + self.rng.below(26) as u8) as char)
    }
    fn deserialize_str<V: Visitor<'de>>(self, v: V) -> Result<V::Value, GenError> {
        v.visit_string(self.string())
    }
    fn deserialize_string<V: Visitor<'de>>(self, v: V) -> Result<V::Value, GenError> {
        v.visit_string(self.string())
    }
    fn deserialize_bytes<V: Visitor<'de>>(self, v: V) -> Result<V::Value, GenError> {
        let n = self.rng.below(16);
        v.visit_byte_buf(self.rng.bytes(n))
    }
    fn deserialize_byte_buf<V: Visitor<'de>>(self, v: V) -> Result<V::Value, GenError> {
        self.deserialize_bytes(v)
    }
    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, GenError> {
        if self.depth > 4 || self.rng.chance(3) {
            v.visit_none()
        } else {
            v.visit_some(&mut self.nested())
        }
    }
    fn deserialize_unit<V: Visitor<'de>>(self, v: V) -> Result<V::Value, GenError> {
        v.visit_unit()
    }
    fn deserialize_unit_struct<V: Visitor<'de>>(self, _: &'static str, v: V) -> Result<V::Value, GenError> {
        v.visit_unit()
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        v: V,
    ) -> Result<V::Value, GenError> {
        v.visit_newtype_struct(&mut self.nested())
    }
    fn deserialize_seq<V: Visitor<'de>>(self, v: V) -> Result<V::Value, GenError> {
        let n = self.len();
        v.visit_seq(Seq {
            de: self.nested(),
            left: n,
        })
    }
    fn deserialize_tuple<V: Visitor<'de>>(self, n: usize, v: V) -> Result<V::Value, GenError> {
        v.visit_seq(Seq {
            de: self.nested(),
            left: n,
        })
    }
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        n: usize,
        v: V,
    ) -> Result<V::Value, GenError> {
        self.deserialize_tuple(n, v)
    }
    fn deserialize_map<V: Visitor<'de>>(self, v: V) -> Result<V::Value, GenError> {
        let n = self.len();
        v.visit_map(Map {
            de: self.nested(),
            left: n,
        })
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, GenError> {
        self.deserialize_tuple(fields.len(), v)
    }
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, GenError> {
        let index = self.rng.below(variants.len().max(1)) as u32;
        v.visit_enum(Enum {
            de: self.nested(),
            index,
        })
    }
    fn deserialize_identifier<V: Visitor<'de>>(self, v: V) -> Result<V::Value, GenError> {
        v.visit_string(self.string())
    }
    fn deserialize_ignored_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, GenError> {
        v.visit_unit()
    }
    fn is_human_readable(&self) -> bool {
        false
    }
}

struct Seq<'a> {
    de: RandomDe<'a>,
    left: usize,
}

impl<'de> de::SeqAccess<'de> for Seq<'_> {
    type Error = GenError;
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, GenError> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(&mut self.de).map(Some)
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

struct Map<'a> {
    de: RandomDe<'a>,
    left: usize,
}

impl<'de> de::MapAccess<'de> for Map<'_> {
    type Error = GenError;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, GenError> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(&mut self.de).map(Some)
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, GenError> {
        seed.deserialize(&mut self.de)
    }
}

struct Enum<'a> {
    de: RandomDe<'a>,
    index: u32,
}

impl<'de, 'a> de::EnumAccess<'de> for Enum<'a> {
    type Error = GenError;
    type Variant = RandomDe<'a>;
    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, RandomDe<'a>), GenError> {
        let index: de::value::U32Deserializer<GenError> = self.index.into_deserializer();
        Ok((seed.deserialize(index)?, self.de))
    }
}

impl<'de> de::VariantAccess<'de> for RandomDe<'_> {
    type Error = GenError;
    fn unit_variant(self) -> Result<(), GenError> {
        Ok(())
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(mut self, seed: T) -> Result<T::Value, GenError> {
        seed.deserialize(&mut self)
    }
    fn tuple_variant<V: Visitor<'de>>(mut self, len: usize, v: V) -> Result<V::Value, GenError> {
        de::Deserializer::deserialize_tuple(&mut self, len, v)
    }
    fn struct_variant<V: Visitor<'de>>(
        mut self,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, GenError> {
        de::Deserializer::deserialize_tuple(&mut self, fields.len(), v)
    }
}

// ------------------------------------------------------------------ mutations

/// Random bytes that look a little like MessagePack: headers of every kind, lengths near
/// the edges, and filler.
pub fn msgpack_noise(rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..rng.below(8) + 1 {
        match rng.below(8) {
            0 => out.push(0x90 | rng.below(16) as u8),       // fixarray
            1 => out.push(0x80 | rng.below(16) as u8),       // fixmap
            2 => out.push(0xa0 | rng.below(32) as u8),       // fixstr
            3 => out.extend([0xdd, 0xff, 0xff, 0xff, 0xff]), // array32, 4 G elements
            4 => out.extend([0xc6, 0x7f, 0xff, 0xff, 0xff]), // bin32, 2 GiB
            5 => out.extend([0xdb, 0xff, 0xff, 0xff, 0xf0]), // str32, 4 GiB
            6 => out.extend([0xdf, 0x00, 0x10, 0x00, 0x00]), // map32, 1 M entries
            _ => {
                let n = rng.below(6);
                out.extend(rng.bytes(n));
            }
        }
    }
    out
}

/// A mutation of `input`: a bit flipped, a byte set, bytes inserted or deleted, a range
/// duplicated, a cut, a MessagePack header with an edge length spliced in, or a piece of
/// `other`; sometimes several.
pub fn mutate(rng: &mut Rng, input: &[u8], other: &[u8]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..1 + rng.below(3) {
        let len = out.len();
        match rng.below(9) {
            0 if len > 0 => {
                let i = rng.below(len);
                out[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                out[i] = [0x00, 0xff, 0x7f, 0x80, 0xc0, 0xc1, 0xdd, 0xdf][rng.below(8)];
            }
            2 => {
                let at = rng.below(len + 1);
                let n = rng.below(8) + 1;
                let bytes = rng.bytes(n);
                out.splice(at..at, bytes);
            }
            3 if len > 0 => {
                let at = rng.below(len);
                let n = rng.below(len - at) + 1;
                out.drain(at..at + n.min(8));
            }
            4 if len > 0 => {
                let at = rng.below(len);
                let n = (rng.below(len - at) + 1).min(64);
                let piece = out[at..at + n].to_vec();
                let to = rng.below(out.len() + 1);
                out.splice(to..to, piece);
            }
            5 => out.truncate(rng.below(len + 1)),
            6 => {
                let at = rng.below(len + 1);
                let noise = msgpack_noise(rng);
                out.splice(at..at, noise);
            }
            7 if !other.is_empty() => {
                let at = rng.below(other.len());
                let n = (rng.below(other.len() - at) + 1).min(64);
                let to = rng.below(len + 1);
                out.splice(to..to, other[at..at + n].iter().copied());
            }
            _ => {
                // A length field somewhere: a u32 near the edges written big-endian.
                if len >= 4 {
                    let at = rng.below(len - 3);
                    // The limits and one past: the client port's request frame (8 MiB),
                    // its answers (64 MiB), the actor endpoint's frame (128 MiB).
                    let v = [
                        0u32,
                        1,
                        0x7fff_ffff,
                        0xffff_ffff,
                        0x0080_0000,
                        0x0080_0001,
                        0x0400_0000,
                        0x0400_0001,
                        0x0800_0000,
                        0x0800_0001,
                    ][rng.below(10)];
                    out[at..at + 4].copy_from_slice(&v.to_be_bytes());
                }
            }
        }
    }
    out
}
