//! The files the pages need, compiled into the binary: the vendored ECharts
//! (`scripts/vendor/echarts.sh` put it in this crate's `assets/web/vendor/echarts/`, with
//! its licence), `stackbench.js` and `stackbench.css`. They live inside this crate's folder
//! so that its package carries them. Runners are often offline, so nothing comes from a
//! CDN; `serve` answers `/assets/<path>` from [`asset`], and `report.html` inlines them.

pub const ECHARTS_JS: &str = include_str!("../../../assets/web/vendor/echarts/echarts.min.js");
pub const ECHARTS_LICENSE: &str = include_str!("../../../assets/web/vendor/echarts/LICENSE");
pub const ECHARTS_NOTICE: &str = include_str!("../../../assets/web/vendor/echarts/NOTICE");
pub const STACKBENCH_JS: &str = include_str!("../../../assets/web/stackbench.js");
pub const STACKBENCH_CSS: &str = include_str!("../../../assets/web/stackbench.css");

/// Paths under the assets prefix (`/assets/` when served).
pub const ECHARTS_PATH: &str = "vendor/echarts/echarts.min.js";
pub const JS_PATH: &str = "stackbench.js";
pub const CSS_PATH: &str = "stackbench.css";

/// Bytes an inlined page carries besides its data (to size the output once).
pub const INLINE_SIZE: usize = ECHARTS_JS.len() + STACKBENCH_JS.len() + STACKBENCH_CSS.len();

/// One asset: its content and its `Content-Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Asset {
    pub content: &'static str,
    pub content_type: &'static str,
}

/// The asset at `path` (relative to the assets prefix, no leading `/`), if there is one.
/// Only these fixed names: no path is ever joined onto a directory.
pub fn asset(path: &str) -> Option<Asset> {
    const JS: &str = "text/javascript; charset=utf-8";
    const TEXT: &str = "text/plain; charset=utf-8";
    let (content, content_type) = match path {
        ECHARTS_PATH => (ECHARTS_JS, JS),
        "vendor/echarts/LICENSE" => (ECHARTS_LICENSE, TEXT),
        "vendor/echarts/NOTICE" => (ECHARTS_NOTICE, TEXT),
        JS_PATH => (STACKBENCH_JS, JS),
        CSS_PATH => (STACKBENCH_CSS, "text/css; charset=utf-8"),
        _ => return None,
    };
    Some(Asset {
        content,
        content_type,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_vendored_library_is_the_pinned_release_and_can_be_inlined() {
        assert!(super::ECHARTS_JS.len() < 1_000_000, "well under 1 MB");
        assert!(!super::ECHARTS_JS.contains("</script"));
        assert!(!super::STACKBENCH_JS.contains("</script"));
        assert!(super::ECHARTS_LICENSE.contains("Apache License"));
        let version = include_str!("../../../assets/web/vendor/echarts/VERSION");
        assert!(version.starts_with("echarts 6.1.0\n"), "{version}");
        assert!(super::asset("../Cargo.toml").is_none());
        assert_eq!(
            super::asset("stackbench.js").map(|a| a.content_type),
            Some("text/javascript; charset=utf-8")
        );
    }
}
