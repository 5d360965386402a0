//! Measures the alternatives to the hand-written tokenizer on one plain
//! trace, for docs/architecture.md: struson's pull reader and a serde_json
//! visitor that borrows from the mapped slice, both only counting events and
//! reading `ph` / `cat` (less work than torchtriage's ingest does).
//!
//! Usage: alt_parsers FILE

use std::fmt;
use std::time::Instant;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use struson::reader::{JsonReader, JsonStreamReader};

fn struson_count(bytes: &[u8]) -> u64 {
    let mut r = JsonStreamReader::new(bytes);
    let mut n = 0;
    r.begin_object().unwrap();
    while r.has_next().unwrap() {
        let name = r.next_name_owned().unwrap();
        if name != "traceEvents" {
            r.skip_value().unwrap();
            continue;
        }
        r.begin_array().unwrap();
        while r.has_next().unwrap() {
            r.begin_object().unwrap();
            while r.has_next().unwrap() {
                let k = r.next_name_owned().unwrap();
                if k == "ph" || k == "cat" {
                    let _ = r.next_string().unwrap();
                } else {
                    r.skip_value().unwrap();
                }
            }
            r.end_object().unwrap();
            n += 1;
        }
        r.end_array().unwrap();
    }
    n
}

struct Doc;
struct Events;
struct Event;

impl<'de> Visitor<'de> for Doc {
    type Value = u64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("trace")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<u64, A::Error> {
        let mut n = 0;
        while let Some(k) = m.next_key::<&'de str>()? {
            if k == "traceEvents" {
                n = m.next_value_seed(Events)?;
            } else {
                m.next_value::<IgnoredAny>()?;
            }
        }
        Ok(n)
    }
}

impl<'de> DeserializeSeed<'de> for Events {
    type Value = u64;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<u64, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Events {
    type Value = u64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("events")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<u64, A::Error> {
        let mut n = 0;
        while s.next_element_seed(Event)?.is_some() {
            n += 1;
        }
        Ok(n)
    }
}

impl<'de> DeserializeSeed<'de> for Event {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Event {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("event")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<(), A::Error> {
        while let Some(k) = m.next_key::<std::borrow::Cow<'de, str>>()? {
            if k == "ph" || k == "cat" {
                let _: std::borrow::Cow<'de, str> = m.next_value()?;
            } else {
                m.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

fn main() {
    let path = std::env::args().nth(1).expect("usage: alt_parsers FILE");
    let file = std::fs::File::open(&path).unwrap();
    let map = unsafe { memmap2::Mmap::map(&file).unwrap() };
    let bytes: &[u8] = &map;
    let mb = bytes.len() as f64 / 1e6;
    let _ = bytes.iter().step_by(4096).fold(0u8, |a, b| a ^ b); // warm the page cache
    let t = Instant::now();
    let n = struson_count(bytes);
    let s = t.elapsed().as_secs_f64();
    println!("struson pull reader:      {n} events, {s:.2} s, {:.0} MB/s", mb / s);
    let t = Instant::now();
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let n = de.deserialize_map(Doc).unwrap();
    let s = t.elapsed().as_secs_f64();
    println!("serde_json visitor:       {n} events, {s:.2} s, {:.0} MB/s", mb / s);
    let t = Instant::now();
    let trace = torchtriage::ingest::load_bytes(bytes).unwrap();
    let s = t.elapsed().as_secs_f64();
    println!("torchtriage, one thread:  {} events, {s:.2} s, {:.0} MB/s", trace.counts.events, mb / s);
}
