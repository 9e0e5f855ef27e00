//! A scenario as a flat, ordered map from dotted paths (`vm.dirty_bytes`,
//! `devices.loop0.write_bps`) to raw values, each remembering where it came
//! from (`file:line` or `--set`). Typed reading and validation happen in
//! `scenario::build`, which consumes entries; anything left over is an unknown
//! key and is reported with its origin.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

#[derive(Clone, Debug, PartialEq)]
pub enum RawVal {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Array(Vec<RawVal>),
}

impl RawVal {
    pub fn describe(&self) -> String {
        match self {
            RawVal::Str(s) => format!("the string \"{s}\""),
            RawVal::Int(i) => format!("the integer {i}"),
            RawVal::Float(f) => format!("the number {f}"),
            RawVal::Bool(b) => format!("the boolean {b}"),
            RawVal::Array(_) => "an array".into(),
        }
    }
}

/// Where a value came from, for error messages.
#[derive(Clone, Debug, PartialEq)]
pub enum Origin {
    File {
        file: String,
        line: usize,
    },
    Set {
        arg: String,
    },
    Builtin,
    /// A check of values taken together (memory against anon and reserve,
    /// a device no filesystem names): the scenario file and the `--set`s
    /// applied to it.
    Derived {
        file: String,
        sets: Vec<String>,
    },
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // line 0: the file as a whole (it could not be read)
            Origin::File { file, line: 0 } => write!(f, "{file}"),
            Origin::File { file, line } => write!(f, "{file}:{line}"),
            Origin::Set { arg } => write!(f, "--set {arg}"),
            Origin::Builtin => write!(f, "<built-in default scenario>"),
            Origin::Derived { file, sets } => {
                write!(f, "{file}")?;
                if !sets.is_empty() {
                    let s: Vec<String> = sets.iter().map(|s| format!("--set {s}")).collect();
                    write!(f, " with {}", s.join(", "))?;
                }
                Ok(())
            }
        }
    }
}

/// A user-facing scenario error: where, what was found, what was expected.
#[derive(Debug, Clone)]
pub struct ScenarioError {
    pub origin: Origin,
    pub msg: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.origin, self.msg)
    }
}

impl std::error::Error for ScenarioError {}

pub fn err<T>(origin: &Origin, msg: impl Into<String>) -> Result<T, ScenarioError> {
    Err(ScenarioError {
        origin: origin.clone(),
        msg: msg.into(),
    })
}

#[derive(Clone, Debug)]
pub struct Entry {
    pub val: RawVal,
    pub origin: Origin,
    /// Position in document order; `--set` entries come after the file's.
    pub order: usize,
}

#[derive(Default, Debug, Clone)]
pub struct RawScenario {
    pub entries: BTreeMap<String, Entry>,
    next: usize,
    /// Tables declared in the file (so an empty `[devices.x]` still exists).
    pub tables: BTreeMap<String, Origin>,
    /// Every path `take` was asked for, once `record_asked` is called (the
    /// test that each key the parser reads is documented in scenario::keys).
    asked: Option<Arc<Mutex<Vec<String>>>>,
}

fn line_of(src: &str, byte: usize) -> usize {
    src.as_bytes()[..byte.min(src.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

impl RawScenario {
    /// Parse TOML text. `file` is used for error origins (file:line).
    pub fn parse(src: &str, file: &str) -> Result<Self, ScenarioError> {
        let doc = toml_edit::ImDocument::parse(src.to_string()).map_err(|e| {
            let line = e.span().map(|s| line_of(src, s.start)).unwrap_or(1);
            let msg = e.message().trim().to_string();
            ScenarioError {
                origin: Origin::File {
                    file: file.into(),
                    line,
                },
                msg: format!("invalid TOML: {msg}"),
            }
        })?;
        let mut raw = RawScenario::default();
        raw.walk_table(doc.as_table(), "", src, file)?;
        Ok(raw)
    }

    fn origin_at(src: &str, file: &str, span: Option<std::ops::Range<usize>>) -> Origin {
        Origin::File {
            file: file.into(),
            line: span.map(|s| line_of(src, s.start)).unwrap_or(1),
        }
    }

    fn walk_table(
        &mut self,
        t: &toml_edit::Table,
        prefix: &str,
        src: &str,
        file: &str,
    ) -> Result<(), ScenarioError> {
        for (k, item) in t.iter() {
            let path = if prefix.is_empty() {
                k.to_string()
            } else {
                format!("{prefix}.{k}")
            };
            let key_span = t.key(k).and_then(|k| k.span());
            let origin = Self::origin_at(src, file, key_span.clone().or_else(|| item.span()));
            match item {
                toml_edit::Item::Table(sub) => {
                    let o = Self::origin_at(src, file, sub.span().or(key_span));
                    self.tables.entry(path.clone()).or_insert(o);
                    self.walk_table(sub, &path, src, file)?;
                }
                toml_edit::Item::Value(toml_edit::Value::InlineTable(it)) => {
                    self.walk_inline(it, &path, &origin, src, file)?;
                }
                toml_edit::Item::Value(v) => {
                    let val = Self::conv(v, &origin)?;
                    self.insert(path, val, origin);
                }
                toml_edit::Item::ArrayOfTables(_) => {
                    return err(
                        &origin,
                        format!("`[[{path}]]` arrays of tables are not used; name each entry, e.g. `[{path}.NAME]`"),
                    );
                }
                toml_edit::Item::None => {}
            }
        }
        Ok(())
    }

    /// An inline table (`machine = { memory = "1G" }`, `jobs.dd = { ... }`,
    /// nested ones too) is the table it stands for; each key has its own
    /// line (an inline table may span lines inside an array), `origin`
    /// where it has none.
    fn walk_inline(
        &mut self,
        it: &toml_edit::InlineTable,
        path: &str,
        origin: &Origin,
        src: &str,
        file: &str,
    ) -> Result<(), ScenarioError> {
        self.tables
            .entry(path.to_string())
            .or_insert(origin.clone());
        for (k, v) in it.iter() {
            let p2 = format!("{path}.{k}");
            let span = it.key(k).and_then(|k| k.span()).or_else(|| v.span());
            let o2 = match span {
                Some(s) => Self::origin_at(src, file, Some(s)),
                None => origin.clone(),
            };
            match v {
                toml_edit::Value::InlineTable(sub) => self.walk_inline(sub, &p2, &o2, src, file)?,
                v => {
                    let val = Self::conv(v, &o2)?;
                    self.insert(p2, val, o2);
                }
            }
        }
        Ok(())
    }

    fn conv(v: &toml_edit::Value, origin: &Origin) -> Result<RawVal, ScenarioError> {
        Ok(match v {
            toml_edit::Value::String(s) => RawVal::Str(s.value().clone()),
            toml_edit::Value::Integer(i) => RawVal::Int(*i.value()),
            toml_edit::Value::Float(f) => RawVal::Float(*f.value()),
            toml_edit::Value::Boolean(b) => RawVal::Bool(*b.value()),
            toml_edit::Value::Array(a) => RawVal::Array(
                a.iter()
                    .map(|x| Self::conv(x, origin))
                    .collect::<Result<_, _>>()?,
            ),
            toml_edit::Value::Datetime(_) => {
                return err(origin, "a date-time is not a valid value here")
            }
            toml_edit::Value::InlineTable(_) => {
                return err(
                    origin,
                    "an inline table inside an array is not used here; expected a value \
                     (a table goes at a key: `NAME = { ... }` or `[NAME]`)",
                )
            }
        })
    }

    pub fn insert(&mut self, path: String, val: RawVal, origin: Origin) {
        self.next += 1;
        self.entries.insert(
            path,
            Entry {
                val,
                origin,
                order: self.next,
            },
        );
    }

    /// Apply one `--set path=value`. The value is typed loosely: integers and
    /// booleans are recognised, anything else stays a string.
    pub fn apply_set(&mut self, arg: &str) -> Result<(), ScenarioError> {
        let origin = Origin::Set { arg: arg.into() };
        let Some((path, value)) = arg.split_once('=') else {
            return err(
                &origin,
                "expected `--set path=value`, e.g. `--set vm.dirty_bytes=200M`",
            );
        };
        let path = path.trim();
        if path.is_empty() || path.split('.').any(|s| s.is_empty()) {
            return err(
                &origin,
                format!("`{path}` is not a dotted path such as `vm.dirty_bytes`"),
            );
        }
        let v = value.trim();
        let val = if let Ok(i) = v.parse::<i64>() {
            RawVal::Int(i)
        } else if v == "true" || v == "false" {
            RawVal::Bool(v == "true")
        } else if v.starts_with('[') && v.ends_with(']') {
            RawVal::Array(
                v[1..v.len() - 1]
                    .split(',')
                    .map(|s| s.trim().trim_matches('"'))
                    .filter(|s| !s.is_empty())
                    .map(|s| RawVal::Str(s.into()))
                    .collect(),
            )
        } else {
            RawVal::Str(v.trim_matches('"').to_string())
        };
        self.insert(path.to_string(), val, origin);
        Ok(())
    }

    /// Remove and return the entry at `path`.
    pub fn take(&mut self, path: &str) -> Option<Entry> {
        if let Some(a) = &self.asked {
            a.lock().expect("asked paths").push(path.to_string());
        }
        self.entries.remove(path)
    }

    /// From now on, record every path `take` is asked for, present or not,
    /// in the returned list (which outlives this scenario's consumption).
    pub fn record_asked(&mut self) -> Arc<Mutex<Vec<String>>> {
        self.asked
            .get_or_insert_with(|| Arc::new(Mutex::new(Vec::new())))
            .clone()
    }

    /// Names of the sub-tables under `prefix` (e.g. device names under
    /// `devices`), in first-appearance order.
    pub fn names_under(&self, prefix: &str) -> Vec<(String, Origin)> {
        let pre = format!("{prefix}.");
        let mut seen: Vec<(String, Origin, usize)> = Vec::new();
        let mut add = |name: &str, origin: &Origin, order: usize| {
            if let Some(e) = seen.iter_mut().find(|(n, _, _)| n == name) {
                if order < e.2 {
                    e.1 = origin.clone();
                    e.2 = order;
                }
            } else {
                seen.push((name.to_string(), origin.clone(), order));
            }
        };
        for (p, e) in &self.entries {
            if let Some(rest) = p.strip_prefix(&pre) {
                if let Some((name, _)) = rest.split_once('.') {
                    add(name, &e.origin, e.order);
                }
            }
        }
        for (p, o) in &self.tables {
            if let Some(rest) = p.strip_prefix(&pre) {
                if !rest.contains('.') {
                    add(rest, o, 0);
                }
            }
        }
        seen.sort_by_key(|(_, _, o)| *o);
        // tables declared without entries keep file order via their line
        seen.into_iter().map(|(n, o, _)| (n, o)).collect()
    }

    /// The leftover entry that comes first in document order, if any.
    pub fn first_leftover(&self) -> Option<(&String, &Entry)> {
        self.entries.iter().min_by_key(|(_, e)| e.order)
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::Scenario;

    fn load(src: &str) -> Result<Scenario, String> {
        Scenario::load_str(src, "t.toml", "t", &[]).map_err(|e| e.to_string())
    }

    #[test]
    fn inline_tables_are_the_tables_they_stand_for() {
        let tables = "[machine]\nmemory = \"1G\"\n[machine.cost]\nsyscall = \"3us\"\n\
                      [devices.d]\ntype = \"ssd\"\n[filesystems.f]\ndevice = \"d\"\n\
                      [jobs.dd]\ntype = \"dd\"\nnumjobs = 3\nbs = \"1M\"\n";
        let inline = "machine = { memory = \"1G\", cost = { syscall = \"3us\" } }\n\
                      devices = { d = { type = \"ssd\" } }\n\
                      filesystems.f = { device = \"d\" }\n\
                      jobs.dd = { type = \"dd\", numjobs = 3, bs = \"1M\" }\n";
        let mixed = "[machine]\nmemory = \"1G\"\ncost = { syscall = \"3us\" }\n\
                     [devices]\nd = { type = \"ssd\" }\n[filesystems.f]\ndevice = \"d\"\n\
                     [jobs]\ndd = { type = \"dd\", numjobs = 3, bs = \"1M\" }\n";
        let a = format!("{:?}", load(tables).unwrap());
        assert_eq!(a, format!("{:?}", load(inline).unwrap()));
        assert_eq!(a, format!("{:?}", load(mixed).unwrap()));
    }

    #[test]
    fn errors_in_inline_tables_name_their_line() {
        let src = "# a job\n\njobs = { dd = { type = \"dd\", numjobs = 0 } }\n\
                   [devices.d]\ntype = \"ssd\"\n[filesystems.f]\ndevice = \"d\"\n";
        let e = load(src).unwrap_err();
        assert!(e.starts_with("t.toml:3: `jobs.dd.numjobs`"), "{e}");
        let e = load(&src.replace("numjobs = 0", "nmjobs = 2")).unwrap_err();
        assert!(
            e.starts_with("t.toml:3: unknown key `jobs.dd.nmjobs`"),
            "{e}"
        );
        let e = load(&src.replace("numjobs = 0", "numjobs = [{ a = 1 }]")).unwrap_err();
        assert!(
            e.contains("t.toml:3: an inline table inside an array"),
            "{e}"
        );
    }
}
