//! glibc's `malloc_info(3)` report, read: the free chunks of every arena by bin, so the
//! allocation benchmarks can give the *largest* free block, which `mallinfo2` does not.
//!
//! The format is glibc's own (version 1 since 2.10): per arena a `<heap nr>` with a
//! `<sizes>` list (one `<size from to total count/>` per non-empty bin, `<unsorted …/>` for
//! the unsorted bin; `from`/`to` are the smallest and largest chunk found in that bin), then
//! `<total type="fast|rest">`, `<system type="current|max">`, `<aspace type="total|mprotect">`;
//! after the heaps the same totals for the process plus `<total type="mmap">`. glibc's
//! `rest` total counts the arena's top chunk with the bins (one more chunk than the bins
//! list), which is how the top chunk, the largest free block of a fresh heap, is found.
//!
//! A report this parser does not understand is an error that names what is wrong and where
//! (element, attribute, line:column): an unknown element, a missing or non-numeric
//! attribute, another version, totals that contradict the bins. A wrong figure read as a
//! right one would be worse than none.

use std::fmt;

/// A bin's free chunks, as listed under `<sizes>`, in bytes of chunk size.
///
/// glibc writes a fastbin as `from = size − 15`, `to = size`, `total = count × size`; every
/// other bin with the sizes it found *including the chunk header's flag bits* (PREV_INUSE,
/// and NON_MAIN_ARENA outside the main arena): a 4112-byte free chunk reads `4113`. The
/// figures here have the flags taken off, so they add up to what `mallinfo2` reports free;
/// [`FreeBin::flag_bytes`] keeps what glibc's totals counted on top.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FreeBin {
    /// `true` for the `<unsorted>` entry.
    pub unsorted: bool,
    /// `true` for a fastbin (one size class).
    pub fast: bool,
    /// Smallest chunk in the bin.
    pub from: u64,
    /// Largest chunk in the bin.
    pub to: u64,
    /// All chunks in the bin.
    pub total: u64,
    pub count: u64,
    /// Flag bits glibc's `rest` total counted for this bin's chunks.
    pub flag_bytes: u64,
}

/// glibc's chunk sizes are multiples of this (MALLOC_ALIGNMENT on 64-bit and i386 since 2.26).
const CHUNK_ALIGN: u64 = 16;
/// The flag bits a chunk's size field carries (PREV_INUSE, IS_MMAPPED, NON_MAIN_ARENA).
const SIZE_FLAGS: u64 = 7;

/// A `<total type=… count=… size=…/>`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Total {
    pub count: u64,
    pub size: u64,
}

/// One arena.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Heap {
    pub nr: u64,
    pub bins: Vec<FreeBin>,
    /// Chunks in fastbins.
    pub fast: Total,
    /// Chunks in the other bins plus the top chunk.
    pub rest: Total,
    /// Bytes the arena holds from the system now.
    pub system_current: u64,
    pub system_max: u64,
}

/// The whole report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MallocInfo {
    pub heaps: Vec<Heap>,
    /// Chunks served by their own `mmap` (never free: glibc unmaps them on free).
    pub mmap: Total,
    pub system_current: u64,
    pub system_max: u64,
}

/// Why a report could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MallocInfoError {
    /// Where in the report, `line:column`, when known.
    pub at: Option<String>,
    pub detail: String,
}

impl fmt::Display for MallocInfoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.at {
            Some(at) => write!(f, "malloc_info report, at {at}: {}", self.detail),
            None => write!(f, "malloc_info report: {}", self.detail),
        }
    }
}

impl std::error::Error for MallocInfoError {}

type Node<'a, 'i> = roxmltree::Node<'a, 'i>;

fn error_at(node: Node<'_, '_>, detail: impl Into<String>) -> MallocInfoError {
    let pos = node.document().text_pos_at(node.range().start);
    MallocInfoError {
        at: Some(format!("{}:{}", pos.row, pos.col)),
        detail: detail.into(),
    }
}

/// The child elements of `node` (text between them must be whitespace).
fn elements<'a, 'i>(node: Node<'a, 'i>) -> Result<Vec<Node<'a, 'i>>, MallocInfoError> {
    let mut out = Vec::new();
    for child in node.children() {
        if child.is_element() {
            out.push(child);
        } else if child.is_text() && child.text().is_some_and(|t| !t.trim().is_empty()) {
            return Err(error_at(
                child,
                format!(
                    "unexpected text {:?} inside <{}>",
                    child.text().unwrap_or_default().trim(),
                    node.tag_name().name()
                ),
            ));
        }
        // Comments and processing instructions carry nothing glibc writes; ignored.
    }
    Ok(out)
}

fn number(node: Node<'_, '_>, attribute: &str) -> Result<u64, MallocInfoError> {
    let tag = node.tag_name().name();
    let text = node
        .attribute(attribute)
        .ok_or_else(|| error_at(node, format!("<{tag}> has no `{attribute}` attribute")))?;
    text.parse::<u64>().map_err(|_| {
        error_at(
            node,
            format!("<{tag}> `{attribute}`=\"{text}\" is not a non-negative integer"),
        )
    })
}

fn kind<'a>(node: Node<'a, '_>) -> Result<&'a str, MallocInfoError> {
    node.attribute("type").ok_or_else(|| {
        error_at(
            node,
            format!("<{}> has no `type` attribute", node.tag_name().name()),
        )
    })
}

/// The `<total>`, `<system>` and `<aspace>` entries that close a heap and the report.
#[derive(Default)]
struct Summary {
    fast: Option<Total>,
    rest: Option<Total>,
    mmap: Option<Total>,
    system_current: Option<u64>,
    system_max: Option<u64>,
}

impl Summary {
    /// Reads one summary element; `Ok(false)` when `node` is not one.
    fn read(&mut self, node: Node<'_, '_>, allow_mmap: bool) -> Result<bool, MallocInfoError> {
        let slot = |seen: bool, what: &str| {
            if seen {
                Err(error_at(node, format!("{what} appears twice")))
            } else {
                Ok(())
            }
        };
        match node.tag_name().name() {
            "total" => {
                let total = Total {
                    count: number(node, "count")?,
                    size: number(node, "size")?,
                };
                let entry = match kind(node)? {
                    "fast" => &mut self.fast,
                    "rest" => &mut self.rest,
                    "mmap" if allow_mmap => &mut self.mmap,
                    other => {
                        return Err(error_at(node, format!("unknown <total type=\"{other}\">")));
                    }
                };
                slot(entry.is_some(), "<total type=…>")?;
                *entry = Some(total);
            }
            "system" => {
                let size = number(node, "size")?;
                let entry = match kind(node)? {
                    "current" => &mut self.system_current,
                    "max" => &mut self.system_max,
                    other => {
                        return Err(error_at(node, format!("unknown <system type=\"{other}\">")));
                    }
                };
                slot(entry.is_some(), "<system type=…>")?;
                *entry = Some(size);
            }
            // Address space (`total`, `mprotect`): checked for form, not needed here.
            "aspace" => {
                number(node, "size")?;
                match kind(node)? {
                    "total" | "mprotect" => {}
                    other => {
                        return Err(error_at(node, format!("unknown <aspace type=\"{other}\">")));
                    }
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn require<T>(
        value: Option<T>,
        parent: Node<'_, '_>,
        what: &str,
    ) -> Result<T, MallocInfoError> {
        value.ok_or_else(|| {
            error_at(
                parent,
                format!("<{}> has no {what}", parent.tag_name().name()),
            )
        })
    }
}

fn read_bins(sizes: Node<'_, '_>) -> Result<Vec<FreeBin>, MallocInfoError> {
    let mut bins = Vec::new();
    for node in elements(sizes)? {
        let unsorted = match node.tag_name().name() {
            "size" => false,
            "unsorted" => true,
            other => {
                return Err(error_at(
                    node,
                    format!("unknown element <{other}> in <sizes>"),
                ));
            }
        };
        let (from, to, total, count) = (
            number(node, "from")?,
            number(node, "to")?,
            number(node, "total")?,
            number(node, "count")?,
        );
        let bin = FreeBin::new(unsorted, from, to, total, count).map_err(|d| error_at(node, d))?;
        bins.push(bin);
    }
    Ok(bins)
}

fn read_heap(node: Node<'_, '_>) -> Result<Heap, MallocInfoError> {
    let nr = number(node, "nr")?;
    let mut bins = None;
    let mut summary = Summary::default();
    for child in elements(node)? {
        if child.tag_name().name() == "sizes" {
            if bins.is_some() {
                return Err(error_at(child, "<sizes> appears twice in one <heap>"));
            }
            bins = Some(read_bins(child)?);
        } else if !summary.read(child, false)? {
            return Err(error_at(
                child,
                format!("unknown element <{}> in <heap>", child.tag_name().name()),
            ));
        }
    }
    let heap = Heap {
        nr,
        bins: Summary::require(bins, node, "<sizes>")?,
        fast: Summary::require(summary.fast, node, "<total type=\"fast\">")?,
        rest: Summary::require(summary.rest, node, "<total type=\"rest\">")?,
        system_current: Summary::require(
            summary.system_current,
            node,
            "<system type=\"current\">",
        )?,
        system_max: Summary::require(summary.system_max, node, "<system type=\"max\">")?,
    };
    if heap.binned_bytes() > heap.fast.size + heap.rest.size {
        return Err(error_at(
            node,
            format!(
                "heap {}: its bins hold {} bytes, more than its fast and rest totals ({} + {})",
                heap.nr,
                heap.binned_bytes(),
                heap.fast.size,
                heap.rest.size
            ),
        ));
    }
    Ok(heap)
}

impl FreeBin {
    /// One `<size>` or `<unsorted>` entry as glibc wrote it; an error says why its figures
    /// cannot be glibc's.
    fn new(unsorted: bool, from: u64, to: u64, total: u64, count: u64) -> Result<FreeBin, String> {
        let raw = format!("{count} chunks of {from}..={to} bytes totalling {total}");
        if count == 0 {
            // glibc lists only non-empty bins.
            return Err(format!("inconsistent bin: {raw}"));
        }
        let fastbin = !unsorted
            && to.is_multiple_of(CHUNK_ALIGN)
            && from + (CHUNK_ALIGN - 1) == to
            && count.checked_mul(to) == Some(total);
        if fastbin {
            return Ok(FreeBin {
                unsorted,
                fast: true,
                from: to,
                to,
                total,
                count,
                flag_bytes: 0,
            });
        }
        let flags = to & SIZE_FLAGS;
        let aligned = (to - flags).is_multiple_of(CHUNK_ALIGN)
            && from & SIZE_FLAGS == flags
            && (from - flags).is_multiple_of(CHUNK_ALIGN);
        if !aligned {
            return Err(format!(
                "inconsistent bin: {raw}: not chunk sizes (multiples of {CHUNK_ALIGN} plus \
                 glibc's flag bits)"
            ));
        }
        let flag_bytes = count.saturating_mul(flags);
        let (from, to) = (from - flags, to - flags);
        let total = total
            .checked_sub(flag_bytes)
            .ok_or_else(|| format!("inconsistent bin: {raw}"))?;
        let fits =
            from <= to && total >= from.saturating_mul(count) && total <= to.saturating_mul(count);
        if !fits {
            return Err(format!("inconsistent bin: {raw}"));
        }
        Ok(FreeBin {
            unsorted,
            fast: false,
            from,
            to,
            total,
            count,
            flag_bytes,
        })
    }
}

impl Heap {
    /// Bytes glibc's totals count for the listed bins (flag bits included).
    pub fn binned_bytes(&self) -> u64 {
        self.bins.iter().map(|b| b.total + b.flag_bytes).sum()
    }

    /// The top chunk: what `fast` + `rest` count beyond the listed bins.
    pub fn top_bytes(&self) -> u64 {
        (self.fast.size + self.rest.size).saturating_sub(self.binned_bytes())
    }

    /// Free bytes: every binned chunk and the top chunk, as `mallinfo2` counts them.
    pub fn free_bytes(&self) -> u64 {
        self.top_bytes() + self.bins.iter().map(|b| b.total).sum::<u64>()
    }

    /// The largest free block: the largest chunk of any bin, or the top chunk.
    pub fn largest_free_bytes(&self) -> u64 {
        self.bins
            .iter()
            .map(|b| b.to)
            .chain([self.top_bytes()])
            .max()
            .unwrap_or(0)
    }
}

impl MallocInfo {
    /// Parses a `malloc_info(0, …)` report.
    pub fn parse(text: &str) -> Result<MallocInfo, MallocInfoError> {
        let doc = roxmltree::Document::parse(text).map_err(|e| MallocInfoError {
            at: None,
            detail: format!("not well-formed XML: {e}"),
        })?;
        let root = doc.root_element();
        if root.tag_name().name() != "malloc" {
            return Err(error_at(
                root,
                format!(
                    "the root element is <{}>, not <malloc>",
                    root.tag_name().name()
                ),
            ));
        }
        match root.attribute("version") {
            Some("1") => {}
            Some(other) => {
                return Err(error_at(
                    root,
                    format!("version \"{other}\": this parser reads glibc's version 1"),
                ));
            }
            None => return Err(error_at(root, "<malloc> has no `version` attribute")),
        }
        let mut heaps = Vec::new();
        let mut summary = Summary::default();
        for child in elements(root)? {
            if child.tag_name().name() == "heap" {
                heaps.push(read_heap(child)?);
            } else if !summary.read(child, true)? {
                return Err(error_at(
                    child,
                    format!("unknown element <{}> in <malloc>", child.tag_name().name()),
                ));
            }
        }
        if heaps.is_empty() {
            return Err(error_at(
                root,
                "no <heap>: every process has its main arena",
            ));
        }
        let info = MallocInfo {
            heaps,
            mmap: Summary::require(summary.mmap, root, "<total type=\"mmap\">")?,
            system_current: Summary::require(
                summary.system_current,
                root,
                "<system type=\"current\">",
            )?,
            system_max: Summary::require(summary.system_max, root, "<system type=\"max\">")?,
        };
        // The process totals are the sums of the heaps'; a disagreement means the report is
        // not what this parser thinks it is.
        let fast = Summary::require(summary.fast, root, "<total type=\"fast\">")?;
        let rest = Summary::require(summary.rest, root, "<total type=\"rest\">")?;
        let heaps_total: u64 = info.heaps.iter().map(|h| h.fast.size + h.rest.size).sum();
        if fast.size + rest.size != heaps_total {
            return Err(error_at(
                root,
                format!(
                    "the process's fast + rest totals ({} + {}) differ from the sum over its \
                     heaps ({heaps_total})",
                    fast.size, rest.size
                ),
            ));
        }
        Ok(info)
    }

    /// Free bytes in every arena (mmapped chunks are never free).
    pub fn free_bytes(&self) -> u64 {
        self.heaps.iter().map(Heap::free_bytes).sum()
    }

    /// The largest free block in any arena.
    pub fn largest_free_bytes(&self) -> u64 {
        self.heaps
            .iter()
            .map(Heap::largest_free_bytes)
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report in glibc 2.36's form: a fastbin (`from = size − 15`), two sorted bins and
    /// the unsorted bin with their chunk sizes carrying PREV_INUSE (+1), and the top chunk
    /// (131136 bytes) counted only in `rest`.
    const GOOD: &str = r#"<malloc version="1">
<heap nr="0">
<sizes>
  <size from="33" to="48" total="96" count="2"/>
  <size from="4113" to="4113" total="8226" count="2"/>
  <size from="65553" to="98321" total="163874" count="2"/>
  <unsorted from="2065" to="2065" total="2065" count="1"/>
</sizes>
<total type="fast" count="2" size="96"/>
<total type="rest" count="6" size="305301"/>
<system type="current" size="540672"/>
<system type="max" size="540672"/>
<aspace type="total" size="540672"/>
<aspace type="mprotect" size="540672"/>
</heap>
<total type="fast" count="2" size="96"/>
<total type="rest" count="6" size="305301"/>
<total type="mmap" count="1" size="1052672"/>
<system type="current" size="540672"/>
<system type="max" size="540672"/>
<aspace type="total" size="540672"/>
<aspace type="mprotect" size="540672"/>
</malloc>
"#;

    /// Written on this machine (glibc 2.36) by a C program that freed a 70000-byte block
    /// between live ones; `mallinfo2().fordblks` printed 204112 right after.
    const CAPTURED: &str = r#"<malloc version="1">
<heap nr="0">
<sizes>
  <unsorted from="70017" to="70017" total="70017" count="1"/>
</sizes>
<total type="fast" count="0" size="0"/>
<total type="rest" count="2" size="204113"/>
<system type="current" size="303104"/>
<system type="max" size="303104"/>
<aspace type="total" size="303104"/>
<aspace type="mprotect" size="303104"/>
</heap>
<total type="fast" count="0" size="0"/>
<total type="rest" count="2" size="204113"/>
<total type="mmap" count="1" size="2002944"/>
<system type="current" size="303104"/>
<system type="max" size="303104"/>
<aspace type="total" size="303104"/>
<aspace type="mprotect" size="303104"/>
</malloc>
"#;

    #[test]
    fn a_captured_report_adds_up_to_what_mallinfo2_said() {
        let info = MallocInfo::parse(CAPTURED).unwrap();
        assert_eq!(info.free_bytes(), 204_112);
        // The unsorted chunk is 70016 bytes; the top chunk 204113 - 70017 = 134096.
        assert_eq!(info.heaps[0].bins[0].to, 70_016);
        assert_eq!(info.largest_free_bytes(), 134_096);
        assert_eq!(
            info.mmap,
            Total {
                count: 1,
                size: 2_002_944
            }
        );
    }

    #[test]
    fn a_glibc_report_gives_the_top_chunk_and_the_largest_free_block() {
        let info = MallocInfo::parse(GOOD).unwrap();
        assert_eq!(info.heaps.len(), 1);
        let heap = &info.heaps[0];
        assert_eq!(heap.bins.len(), 4);
        assert!(heap.bins[0].fast && !heap.bins[1].fast);
        assert!(heap.bins[3].unsorted);
        assert_eq!((heap.bins[2].from, heap.bins[2].to), (65_552, 98_320));
        // Free: fast 96 + bins 8224 + 163872 + 2064 + top 131136.
        assert_eq!(heap.top_bytes(), 131_136);
        assert_eq!(info.free_bytes(), 305_392);
        assert_eq!(info.largest_free_bytes(), 131_136);
        assert_eq!(info.system_current, 540_672);
    }

    #[test]
    fn a_bin_larger_than_the_top_chunk_is_the_largest_free_block() {
        let text = GOOD.replace(
            r#"<size from="65553" to="98321" total="163874" count="2"/>"#,
            r#"<size from="65553" to="200001" total="265554" count="2"/>"#,
        );
        let text = text.replace(r#"size="305301""#, r#"size="406981""#);
        let info = MallocInfo::parse(&text).unwrap();
        assert_eq!(info.largest_free_bytes(), 200_000);
    }

    #[test]
    fn several_arenas_are_summed() {
        let heap0 = GOOD
            .split("<heap")
            .nth(1)
            .unwrap()
            .split("</heap>")
            .next()
            .unwrap();
        let heap1 = heap0.replacen("nr=\"0\"", "nr=\"1\"", 1);
        let text = GOOD
            .replacen("</heap>", &format!("</heap>\n<heap{heap1}</heap>"), 1)
            .replace(
                "<total type=\"fast\" count=\"2\" size=\"96\"/>\n<total type=\"rest\" count=\"6\" size=\"305301\"/>\n<total type=\"mmap\"",
                "<total type=\"fast\" count=\"4\" size=\"192\"/>\n<total type=\"rest\" count=\"12\" size=\"610602\"/>\n<total type=\"mmap\"",
            );
        let info = MallocInfo::parse(&text).unwrap();
        assert_eq!(info.heaps.len(), 2);
        assert_eq!(info.free_bytes(), 2 * 305_392);
    }

    fn error(text: &str) -> String {
        MallocInfo::parse(text).unwrap_err().to_string()
    }

    #[test]
    fn bad_reports_are_errors_that_name_what_is_wrong() {
        assert!(error("").contains("not well-formed"));
        assert!(error("<malloc version=\"1\"><heap").contains("not well-formed"));
        assert!(error("<free version=\"1\"/>").contains("not <malloc>"));
        let v2 = error(&GOOD.replace("version=\"1\"", "version=\"2\""));
        assert!(v2.contains("version \"2\""), "{v2}");
        assert!(error(&GOOD.replace(" version=\"1\"", "")).contains("no `version`"));
        let unknown = error(&GOOD.replace("<unsorted", "<sorted"));
        assert!(
            unknown.contains("unknown element <sorted> in <sizes>"),
            "{unknown}"
        );
        assert!(unknown.contains("at 7:"), "{unknown}");
        let attribute = error(&GOOD.replace("from=\"4113\"", "fro=\"4113\""));
        assert!(attribute.contains("<size> has no `from`"), "{attribute}");
        let nan = error(&GOOD.replace("total=\"8226\"", "total=\"8k\""));
        assert!(
            nan.contains("`total`=\"8k\" is not a non-negative integer"),
            "{nan}"
        );
        let negative =
            error(&GOOD.replace("total=\"2065\" count=\"1\"", "total=\"2065\" count=\"-1\""));
        assert!(negative.contains("`count`=\"-1\""), "{negative}");
        let heap_rest = "<total type=\"rest\" count=\"6\" size=\"305301\"/>\n<system";
        let missing_rest = error(&GOOD.replacen(heap_rest, "<system", 1));
        assert!(
            missing_rest.contains("<heap> has no <total type=\"rest\">"),
            "{missing_rest}"
        );
        let no_mmap =
            error(&GOOD.replace("<total type=\"mmap\" count=\"1\" size=\"1052672\"/>", ""));
        assert!(
            no_mmap.contains("<malloc> has no <total type=\"mmap\">"),
            "{no_mmap}"
        );
        let odd_type = error(&GOOD.replacen("<total type=\"fast\"", "<total type=\"slow\"", 1));
        assert!(
            odd_type.contains("unknown <total type=\"slow\">"),
            "{odd_type}"
        );
        let mmap_in_heap = error(&GOOD.replacen(
            heap_rest,
            &format!("<total type=\"mmap\" count=\"0\" size=\"0\"/>\n{heap_rest}"),
            1,
        ));
        assert!(
            mmap_in_heap.contains("unknown <total type=\"mmap\">"),
            "{mmap_in_heap}"
        );
        let no_type = error(&GOOD.replacen("<system type=\"max\"", "<system", 1));
        assert!(no_type.contains("<system> has no `type`"), "{no_type}");
        let stray = error(&GOOD.replacen("</sizes>", "</sizes>\n<arena/>", 1));
        assert!(
            stray.contains("unknown element <arena> in <heap>"),
            "{stray}"
        );
        let text = error(&GOOD.replace("<sizes>", "<sizes>garbage"));
        assert!(text.contains("unexpected text \"garbage\""), "{text}");
        let empty = "<malloc version=\"1\"><total type=\"fast\" count=\"0\" size=\"0\"/></malloc>";
        assert!(error(empty).contains("no <heap>"));
    }

    #[test]
    fn figures_that_contradict_each_other_are_errors() {
        // 2 chunks of at most 4112 bytes cannot hold 9000.
        let bin = error(&GOOD.replace("total=\"8226\"", "total=\"9002\""));
        assert!(bin.contains("inconsistent bin"), "{bin}");
        let upside_down =
            error(&GOOD.replace("from=\"65553\" to=\"98321\"", "from=\"98321\" to=\"65553\""));
        assert!(upside_down.contains("inconsistent bin"), "{upside_down}");
        // Sizes that are no chunk size (not 16-aligned after the flag bits).
        let odd = error(&GOOD.replace("from=\"4113\" to=\"4113\"", "from=\"4121\" to=\"4121\""));
        assert!(odd.contains("not chunk sizes"), "{odd}");
        let zero = error(&GOOD.replace("total=\"2065\" count=\"1\"", "total=\"2065\" count=\"0\""));
        assert!(zero.contains("inconsistent bin"), "{zero}");
        // Bins holding more than the heap's totals.
        let over = error(&GOOD.replacen("size=\"305301\"", "size=\"1000\"", 1));
        assert!(
            over.contains("more than its fast and rest totals"),
            "{over}"
        );
        // Process totals that are not the sum over the heaps.
        let sum = error(&GOOD.replacen(
            "</heap>\n<total type=\"fast\" count=\"2\" size=\"96\"/>",
            "</heap>\n<total type=\"fast\" count=\"2\" size=\"97\"/>",
            1,
        ));
        assert!(sum.contains("differ from the sum over its heaps"), "{sum}");
        let twice = error(&GOOD.replacen("<sizes>", "<sizes></sizes>\n<sizes>", 1));
        assert!(twice.contains("<sizes> appears twice"), "{twice}");
        let system_twice = error(&GOOD.replacen(
            "<system type=\"max\" size=\"540672\"/>",
            "<system type=\"max\" size=\"540672\"/>\n<system type=\"max\" size=\"1\"/>",
            1,
        ));
        assert!(system_twice.contains("appears twice"), "{system_twice}");
    }
}
