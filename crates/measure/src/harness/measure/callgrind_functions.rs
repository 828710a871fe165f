//! Per-function costs out of a Callgrind output file: what the gate needs to name the
//! function that got slower, not only the benchmark. [`super::callgrind_out`] reads the
//! totals the verdict stands on; this reads the body of the format (Callgrind's "Callgrind
//! Format Specification", valgrind/docs/callgrind-format): `fn=` blocks of cost lines,
//! `calls=` lines whose following cost line is the inclusive cost of that call, name
//! compression (`fn=(12) name` defines id 12, `fn=(12)` refers to it; one id space for
//! functions, one for files, one for objects), the file switches `fl=`/`fi=`/`fe=`, and
//! position compression in cost lines (`+3`, `-2`, `*` relative to the previous position).
//!
//! A function's inclusive cost is its own cost plus the inclusive cost of every call it
//! makes to another function. A call to itself adds nothing: its callee's own cost is
//! already the caller's. Mutual recursion (`a` calls `b` calls `a`) counts the inner calls
//! twice in the outer function's inclusive cost, as `callgrind_annotate --inclusive=yes`
//! does; the benchmarks' ranking of changes tolerates that.
//!
//! Names are demangled with rustc-demangle when Callgrind left them mangled (legacy `_ZN…E`
//! and v0 `_R…`); Callgrind 3.19 already demangles Rust names itself, and those are kept.
//! Bad input is an error naming the file and line, never a panic.

use super::callgrind_error::CallgrindFileError;
use std::collections::BTreeMap;
use std::path::Path;

/// One function's costs in one Callgrind file: instructions (`Ir`) of one iteration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FunctionCost {
    /// The source file of the function's `fl=` (as the compiler recorded it: relative for a
    /// workspace member built by cargo, absolute for registry crates and std), if known.
    pub file: Option<String>,
    /// Instructions in the function itself.
    pub self_ir: u64,
    /// Instructions in the function and everything it called.
    pub inclusive_ir: u64,
    /// How many times it was called while collection was on (`calls=` lines naming it).
    pub calls: u64,
}

/// Every function of one Callgrind file, by demangled name.
pub type FunctionCosts = BTreeMap<String, FunctionCost>;

/// Which id space a compressed name belongs to.
#[derive(Clone, Copy)]
enum Space {
    Object,
    File,
    Function,
}

/// The state of a reader walking the file top to bottom.
struct Reader<'a> {
    path: &'a Path,
    names: [BTreeMap<u64, String>; 3],
    /// The number of position columns (`positions: instr line` is 2; default `line`).
    positions: usize,
    /// The column of `Ir` among the events, once `events:` was read.
    ir_column: Option<usize>,
    /// The last absolute value of each position column, for `+n`, `-n` and `*`.
    last_position: Vec<u64>,
    file: Option<String>,
    function: Option<String>,
    callee: Option<String>,
    callee_file: Option<String>,
    /// The next cost line is a call's inclusive cost (after `calls=`), or a jump's source
    /// position only (after `jump=`/`jcnd=`).
    pending: Pending,
    costs: FunctionCosts,
}

/// A line of the file and its number, for errors.
#[derive(Clone, Copy)]
struct At<'a> {
    line: &'a str,
    no: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Pending {
    Nothing,
    Call { line: usize },
    Jump { line: usize },
}

/// Reads the per-function instruction counts out of Callgrind's output `text`; `path` only
/// names the file in errors.
pub fn parse_functions(text: &str, path: &Path) -> Result<FunctionCosts, CallgrindFileError> {
    let mut reader = Reader {
        path,
        names: Default::default(),
        positions: 1,
        ir_column: None,
        last_position: vec![0],
        file: None,
        function: None,
        callee: None,
        callee_file: None,
        pending: Pending::Nothing,
        costs: FunctionCosts::new(),
    };
    for (index, line) in text.lines().enumerate() {
        reader.line(line.trim_end(), index + 1)?;
    }
    if let Pending::Call { line } | Pending::Jump { line } = reader.pending {
        return Err(reader.malformed(line, "", "the file ends before the cost line it announces"));
    }
    Ok(reader.costs)
}

impl Reader<'_> {
    fn malformed(&self, line: usize, text: &str, why: &str) -> CallgrindFileError {
        CallgrindFileError::Malformed {
            path: self.path.to_owned(),
            line,
            text: text.chars().take(120).collect(),
            why: why.to_owned(),
        }
    }

    fn line(&mut self, line: &str, no: usize) -> Result<(), CallgrindFileError> {
        if line.is_empty() || line.starts_with('#') {
            return Ok(());
        }
        let first = line.as_bytes()[0];
        if first.is_ascii_digit() || matches!(first, b'+' | b'-' | b'*') {
            return self.cost_line(line, no);
        }
        if let Pending::Call { .. } | Pending::Jump { .. } = self.pending {
            return Err(self.malformed(
                no,
                line,
                "a cost line must follow a `calls=`, `jump=` or `jcnd=` line",
            ));
        }
        if let Some((key, value)) = line.split_once('=')
            && is_key(key)
        {
            return self.specification(key, value, At { line, no });
        }
        if let Some((key, value)) = line.split_once(':')
            && is_key(key)
        {
            return self.header(key, value, At { line, no });
        }
        Err(self.malformed(
            no,
            line,
            "neither a `key: value` header, a `key=value` specification nor a cost line",
        ))
    }

    fn header(&mut self, key: &str, value: &str, at: At<'_>) -> Result<(), CallgrindFileError> {
        let At { line, no } = at;
        match key {
            "positions" => {
                let kinds: Vec<&str> = value.split_whitespace().collect();
                if kinds.is_empty() || kinds.iter().any(|k| !matches!(*k, "instr" | "line")) {
                    return Err(self.malformed(no, line, "positions are `instr`, `line` or both"));
                }
                self.positions = kinds.len();
                self.last_position = vec![0; kinds.len()];
            }
            "events" => {
                let column = value.split_whitespace().position(|e| e == "Ir");
                self.ir_column = Some(column.ok_or_else(|| CallgrindFileError::MissingEvent {
                    path: self.path.to_owned(),
                    event: "Ir",
                    events: value.trim().to_owned(),
                })?);
            }
            // `version`, `creator`, `cmd`, `part`, `desc`, `summary`, `totals`, … : the
            // totals are callgrind_out's; the rest describes the run.
            _ => {}
        }
        Ok(())
    }

    fn specification(
        &mut self,
        key: &str,
        value: &str,
        at: At<'_>,
    ) -> Result<(), CallgrindFileError> {
        let At { line, no } = at;
        match key {
            "ob" | "cob" => {
                self.name(Space::Object, value, line, no)?;
            }
            "fl" => {
                self.file = Some(self.name(Space::File, value, line, no)?);
            }
            // Inlined code from another file: the function stays the same.
            "fi" | "fe" | "jfi" => {
                self.name(Space::File, value, line, no)?;
            }
            "cfi" | "cfl" => {
                self.callee_file = Some(self.name(Space::File, value, line, no)?);
            }
            "fn" => {
                let name = demangled(&self.name(Space::Function, value, line, no)?);
                let entry = self.costs.entry(name.clone()).or_default();
                if entry.file.is_none() {
                    entry.file.clone_from(&self.file);
                }
                self.function = Some(name);
                self.callee = None;
                self.callee_file = None;
            }
            "cfn" => {
                self.callee = Some(demangled(&self.name(Space::Function, value, line, no)?));
            }
            "calls" => {
                let mut fields = value.split_whitespace();
                let count = fields
                    .next()
                    .and_then(|c| c.parse::<u64>().ok())
                    .ok_or_else(|| self.malformed(no, line, "`calls=` needs a call count"))?;
                let callee = self.callee.clone().ok_or_else(|| {
                    self.malformed(no, line, "`calls=` without a `cfn=` naming the callee")
                })?;
                if self.function.is_none() {
                    return Err(self.malformed(no, line, "`calls=` before any `fn=`"));
                }
                for field in fields {
                    self.check_position_token(field, line, no)?;
                }
                let entry = self.costs.entry(callee).or_default();
                entry.calls = entry.calls.saturating_add(count);
                if entry.file.is_none() {
                    entry.file.clone_from(&self.callee_file);
                }
                self.pending = Pending::Call { line: no };
            }
            "jump" | "jcnd" => self.pending = Pending::Jump { line: no },
            // The format may grow: an unknown specification changes no cost.
            _ => {}
        }
        Ok(())
    }

    /// Resolves `(id) name`, `(id)` or a plain name in `space`.
    fn name(
        &mut self,
        space: Space,
        value: &str,
        line: &str,
        no: usize,
    ) -> Result<String, CallgrindFileError> {
        let value = value.trim();
        let Some(rest) = value.strip_prefix('(') else {
            return Ok(value.to_owned());
        };
        let (id, name) = rest
            .split_once(')')
            .ok_or_else(|| self.malformed(no, line, "a compressed name `(id)` lacks its `)`"))?;
        let id: u64 = id
            .parse()
            .map_err(|_| self.malformed(no, line, "a compressed name's id is not a number"))?;
        let names = &mut self.names[space as usize];
        let name = name.trim();
        if name.is_empty() {
            names.get(&id).cloned().ok_or_else(|| {
                self.malformed(no, line, "a compressed name refers to an id never defined")
            })
        } else {
            names.insert(id, name.to_owned());
            Ok(name.to_owned())
        }
    }

    fn cost_line(&mut self, line: &str, no: usize) -> Result<(), CallgrindFileError> {
        let mut fields = line.split_whitespace();
        for column in 0..self.positions {
            let token = fields
                .next()
                .ok_or_else(|| self.malformed(no, line, "a cost line lacks its positions"))?;
            let value = self.check_position_token(token, line, no)?;
            self.last_position[column] = match value {
                Position::Absolute(v) => v,
                Position::Relative(d) => self.last_position[column].saturating_add_signed(d),
                Position::Same => self.last_position[column],
            };
        }
        let pending = std::mem::replace(&mut self.pending, Pending::Nothing);
        if let Pending::Jump { .. } = pending {
            return Ok(());
        }
        let ir_column = self.ir_column.ok_or_else(|| {
            self.malformed(no, line, "a cost line comes before the `events:` line")
        })?;
        let mut ir = 0;
        for (column, field) in fields.enumerate() {
            let count = field
                .parse::<u64>()
                .map_err(|_| self.malformed(no, line, "an event count is not a number"))?;
            if column == ir_column {
                ir = count;
            }
        }
        let function = self
            .function
            .clone()
            .ok_or_else(|| self.malformed(no, line, "a cost line before any `fn=`"))?;
        let callee_is_self = self.callee.as_deref() == Some(function.as_str());
        let entry = self.costs.entry(function).or_default();
        match pending {
            Pending::Call { .. } if callee_is_self => {}
            Pending::Call { .. } => entry.inclusive_ir = entry.inclusive_ir.saturating_add(ir),
            _ => {
                entry.self_ir = entry.self_ir.saturating_add(ir);
                entry.inclusive_ir = entry.inclusive_ir.saturating_add(ir);
            }
        }
        Ok(())
    }

    fn check_position_token(
        &self,
        token: &str,
        line: &str,
        no: usize,
    ) -> Result<Position, CallgrindFileError> {
        position(token).ok_or_else(|| {
            self.malformed(no, line, "a position is a number, `0x…`, `+n`, `-n` or `*`")
        })
    }
}

enum Position {
    Absolute(u64),
    Relative(i64),
    Same,
}

fn position(token: &str) -> Option<Position> {
    if token == "*" {
        return Some(Position::Same);
    }
    if let Some(d) = token.strip_prefix('+') {
        return d.parse::<i64>().ok().map(Position::Relative);
    }
    if let Some(d) = token.strip_prefix('-') {
        return d.parse::<i64>().ok().map(|d| Position::Relative(-d));
    }
    if let Some(hex) = token.strip_prefix("0x") {
        return u64::from_str_radix(hex, 16).ok().map(Position::Absolute);
    }
    token.parse::<u64>().ok().map(Position::Absolute)
}

/// A specification or header key: ASCII letters, digits and `_`, starting with a letter.
fn is_key(key: &str) -> bool {
    key.starts_with(|c: char| c.is_ascii_alphabetic())
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `name` demangled when it is a mangled Rust symbol (legacy or v0), as written otherwise.
/// The alternate form leaves out legacy mangling's hash (`::h0123…`), as Callgrind does.
pub fn demangled(name: &str) -> String {
    match rustc_demangle::try_demangle(name) {
        Ok(symbol) => format!("{symbol:#}"),
        Err(_) => name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<FunctionCosts, CallgrindFileError> {
        parse_functions(text, Path::new("callgrind.out.test"))
    }

    /// The shape of a real counting-mode file (Valgrind 3.19, legacy-mangled crate, names
    /// demangled by Callgrind), cut down: name compression for files and functions, a
    /// subposition-compressed body, an inlined file (`fi=`), calls with inclusive costs.
    const REAL: &str = "# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 2206
cmd:  ./bench --bench --test ^encode$
part: 1

desc: I1 cache: 32768 B, 64 B, 8-way associative
desc: Timerange: Basic block 0 - 52318
positions: line
events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw
summary: 1226 300 120 9 4 1 9 2 1

ob=(1) /tmp/x/bench
fl=(1) /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/criterion-0.5.1/src/bencher.rs
fn=(1) criterion::bencher::Bencher<M>::iter
87 6 1 2
+3 4 2
cfl=(2) benches/work.rs
cfn=(2) work::bench_encode::{{closure}}
calls=1 0
* 1200 290 116 7 4 1 7 2 1
-1 2

fl=(2)
fn=(2)
12 10 4 2
cfn=(3) work::checksum
calls=1 0
+2 1000 200 100
cfn=(4) _ZN4core3ptr13drop_in_place17h0123456789abcdefE
calls=1 0
+1 90 20 10
fi=(3) /rustc/90b35a6239c3d8bdabc530a6a0816f7ff89a0aaf/library/core/src/hint.rs
+1 100 66 4
fe=(2)
+1 0 0 0

fl=(2)
fn=(3)
30 1000 200 100

fn=(4)
40 90 20 10

totals: 1226 300 120 9 4 1 9 2 1
";

    #[test]
    fn a_real_files_functions_get_self_and_inclusive_costs() {
        let costs = parse(REAL).unwrap();
        let iter = &costs["criterion::bencher::Bencher<M>::iter"];
        assert_eq!(iter.self_ir, 6 + 4 + 2);
        assert_eq!(iter.inclusive_ir, 12 + 1200);
        assert!(
            iter.file
                .as_deref()
                .unwrap()
                .ends_with("criterion-0.5.1/src/bencher.rs")
        );
        let closure = &costs["work::bench_encode::{{closure}}"];
        assert_eq!(closure.self_ir, 10 + 100);
        assert_eq!(closure.inclusive_ir, 10 + 1000 + 90 + 100);
        assert_eq!(closure.calls, 1);
        assert_eq!(closure.file.as_deref(), Some("benches/work.rs"));
        let checksum = &costs["work::checksum"];
        assert_eq!((checksum.self_ir, checksum.inclusive_ir), (1000, 1000));
        // A mangled name Callgrind left alone is demangled, without its hash.
        let drop = &costs["core::ptr::drop_in_place"];
        assert_eq!(drop.inclusive_ir, 90);
        assert!(!costs.keys().any(|k| k.starts_with("_ZN")));
    }

    #[test]
    fn instr_and_line_positions_with_compression_and_hex_addresses() {
        let text = "positions: instr line\nevents: Ir\nfn=(7) f\n0x401000 12 5\n+4 * 3\n\
                    -2 +1 2\n* * 1\ncfn=(8) g\ncalls=2 0x401100 40\n+8 -1 20\nfn=(8)\n\
                    0x401100 40 20\n";
        let costs = parse(text).unwrap();
        assert_eq!((costs["f"].self_ir, costs["f"].inclusive_ir), (11, 31));
        assert_eq!(costs["g"].calls, 2);
        assert_eq!(costs["g"].inclusive_ir, 20);
    }

    #[test]
    fn direct_recursion_adds_nothing_to_the_inclusive_cost() {
        let text = "events: Ir\nfn=(1) fib\n1 30\ncfn=(1)\ncalls=4 1\n1 120\n";
        let costs = parse(text).unwrap();
        assert_eq!((costs["fib"].self_ir, costs["fib"].inclusive_ir), (30, 30));
    }

    #[test]
    fn v0_and_legacy_mangled_names_are_demangled_and_demangled_ones_kept() {
        assert_eq!(
            demangled("_ZN4core3ptr13drop_in_place17h0123456789abcdefE"),
            "core::ptr::drop_in_place"
        );
        assert_eq!(demangled("_RNvCs1234_7mycrate3foo"), "mycrate::foo");
        for kept in [
            "<criterion::bencher::Bencher>::iter::<work::benches::{closure#0}>",
            "malloc",
            "pthread_create@@GLIBC_2.34",
            "0x0000000000401000",
        ] {
            assert_eq!(demangled(kept), kept);
        }
    }

    #[test]
    fn an_empty_body_has_no_functions() {
        assert!(parse("").unwrap().is_empty());
        assert!(parse("events: Ir\ntotals: 0\n").unwrap().is_empty());
    }

    #[test]
    fn malformed_input_is_an_error_naming_the_file_the_line_and_the_fault() {
        let cases: [(&str, usize, &str); 12] = [
            ("events: Ir\nfn=f\n1 x\n", 3, "not a number"),
            ("fn=f\n1 5\n", 2, "before the `events:`"),
            ("events: Ir\n1 5\n", 2, "before any `fn=`"),
            ("events: Ir\nfn=(3)\n", 2, "never defined"),
            ("events: Ir\nfn=(3 f\n", 2, "lacks its `)`"),
            ("events: Ir\nfn=(x) f\n", 2, "not a number"),
            ("events: Ir\nfn=f\ncalls=1 0\n1 5\n", 3, "without a `cfn=`"),
            ("events: Ir\nfn=f\ncfn=g\ncalls=1 0\n", 4, "ends before"),
            (
                "events: Ir\nfn=f\ncfn=g\ncalls=1 0\nfn=h\n",
                5,
                "must follow",
            ),
            ("events: Ir\nfn=f\n+x 5\n", 3, "a position is"),
            ("events: Ir\nfn=f\n!! what\n", 3, "neither"),
            ("positions: offset\n", 1, "positions are"),
        ];
        for (text, line, why) in cases {
            let error = parse(text).unwrap_err().to_string();
            assert!(error.contains("callgrind.out.test"), "{text:?}: {error}");
            assert!(error.contains(&format!("line {line}")), "{text:?}: {error}");
            assert!(error.contains(why), "{text:?}: {error}");
        }
        let no_ir = parse("events: Dr Dw\n").unwrap_err().to_string();
        assert!(no_ir.contains("Ir"), "{no_ir}");
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(512))]

        /// A real file cut short or with one byte changed reads or fails naming the file,
        /// and never panics.
        #[test]
        fn a_damaged_real_file_never_panics(cut in 0usize..REAL.len(), at in 0usize..REAL.len(), byte: u8) {
            let mut damaged = REAL.as_bytes()[..cut].to_vec();
            if let Some(b) = damaged.get_mut(at) {
                *b = byte;
            }
            let text = String::from_utf8_lossy(&damaged);
            if let Err(e) = parse(&text) {
                proptest::prop_assert!(e.to_string().contains("callgrind.out.test"), "{}", e);
            }
        }
    }

    #[test]
    fn garbage_never_panics() {
        for text in [
            "\u{0}\u{1}garbage",
            "=",
            ":",
            "(",
            "fn=(",
            "fn=()",
            "calls=",
            "events:\n+",
            "positions: line line line\nevents: Ir\nfn=f\n1\n",
            "events: Ir\nfn=f\n-99999999999999999999 1\n",
            "events: Ir\nfn=f\n18446744073709551615 18446744073709551615\n",
        ] {
            let _ = parse(text);
        }
    }
}
