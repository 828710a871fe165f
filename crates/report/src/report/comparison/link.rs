//! The link from a PR comment to the comparison's page on `stackbench serve`. The page is
//! named by the comparison's content (`/comparisons/sha256-<hex>`), not by the id a server
//! assigns, so the comment can be written before, and independently of, the upload of
//! `comparison.json` (`POST /api/comparisons`): any upload of the same content makes the
//! link resolve, and uploading it twice is one comparison.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The environment variable naming the server; it wins over `[serve] url` in the config.
pub const SERVER_URL_ENV: &str = "STACKBENCH_SERVER_URL";

/// The prefix of a content-named comparison reference.
pub const CHECKSUM_PREFIX: &str = "sha256-";

/// `value` as compact JSON with every object's keys sorted: one text per content, whatever
/// the whitespace or key order of the file it came from.
pub fn canonical_json(value: &Value) -> String {
    fn write(value: &Value, out: &mut String) {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for (i, key) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(key.clone()).to_string());
                    out.push(':');
                    write(&map[key], out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(item, out);
                }
                out.push(']');
            }
            scalar => out.push_str(&scalar.to_string()),
        }
    }
    let mut out = String::new();
    write(value, &mut out);
    out
}

/// `sha256-<hex>` of the canonical form of a comparison document.
pub fn comparison_checksum(value: &Value) -> String {
    let digest = Sha256::digest(canonical_json(value).as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("{CHECKSUM_PREFIX}{hex}")
}

/// The configured server: `$STACKBENCH_SERVER_URL`, else `[serve] url` of the config, with
/// any trailing `/` removed. A value that is not a plain `http(s)://` URL is refused with
/// the reason (it would break the Markdown link, or point somewhere unintended).
pub fn server_url() -> Result<Option<String>, String> {
    let from_env = std::env::var(SERVER_URL_ENV)
        .ok()
        .filter(|v| !v.trim().is_empty());
    let (url, source) = match from_env {
        Some(url) => (url, format!("${SERVER_URL_ENV}")),
        None => {
            let config = crate::config::Config::discover(None).map_err(|e| e.to_string())?;
            match config.serve.url {
                Some(url) => (url, "[serve] url of the config".to_string()),
                None => return Ok(None),
            }
        }
    };
    let url = url.trim().trim_end_matches('/').to_string();
    let plain = (url.starts_with("http://") || url.starts_with("https://"))
        && !url
            .chars()
            .any(|c| c.is_whitespace() || "()<>[]\"'`".contains(c));
    if !plain {
        return Err(format!(
            "{source} = `{url}` is not a plain http:// or https:// URL; the comment has no dashboard link"
        ));
    }
    Ok(Some(url))
}

/// The page of the comparison `document` (its JSON text) on `server`.
pub fn comparison_page_url(server: &str, document: &str) -> Option<String> {
    let value: Value = serde_json::from_str(document).ok()?;
    Some(format!(
        "{server}/comparisons/{}",
        comparison_checksum(&value)
    ))
}

/// `markdown` with the dashboard link of `document` (the comparison.json text written
/// beside it) when a server is configured; a bad setting is a warning, never a failed
/// comment.
pub fn link_comment(markdown: String, document: &str) -> String {
    match server_url() {
        Ok(Some(server)) => match comparison_page_url(&server, document) {
            Some(url) => super::with_dashboard_link(&markdown, &url),
            None => markdown,
        },
        Ok(None) => markdown,
        Err(reason) => {
            eprintln!("warning: {reason}");
            markdown
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checksum_ignores_whitespace_and_key_order_only() {
        let a: Value =
            serde_json::from_str(r#"{"b": [1, {"y": 2, "x": "<"}], "a": null}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a":null,"b":[1,{"x":"<","y":2}]}"#).unwrap();
        let c: Value = serde_json::from_str(r#"{"a":null,"b":[{"x":"<","y":2},1]}"#).unwrap();
        assert_eq!(canonical_json(&a), r#"{"a":null,"b":[1,{"x":"<","y":2}]}"#);
        assert_eq!(comparison_checksum(&a), comparison_checksum(&b));
        assert_ne!(comparison_checksum(&a), comparison_checksum(&c));
        assert!(comparison_checksum(&a).starts_with("sha256-"));
        assert_eq!(comparison_checksum(&a).len(), "sha256-".len() + 64);
    }
}
