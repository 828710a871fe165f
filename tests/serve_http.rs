//! `stackbench serve` over HTTP, as a real process on a free localhost port: every page
//! and endpoint, the upload contract (201/200/4xx, nothing stored on any 4xx), the token,
//! the read-only default, the security headers, and a store that cannot be opened.

#[path = "serve_support/mod.rs"]
mod serve_support;

use serde_json::Value;
use serve_support::*;

fn stored_run_ids(server: &Server) -> Vec<String> {
    let listed = server.get("/api/runs");
    assert_eq!(listed.status, 200, "{}", listed.text());
    listed.json()["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap().to_string())
        .collect()
}

fn assert_security_headers(path: &str, response: &Response) {
    let csp = response
        .header("content-security-policy")
        .unwrap_or_else(|| panic!("{path}: no Content-Security-Policy"));
    assert!(
        csp.contains("default-src 'self'") && csp.contains("script-src 'self'"),
        "{path}: {csp}"
    );
    assert!(!csp.contains("unsafe-inline"), "{path}: {csp}");
    assert_eq!(
        response.header("x-content-type-options"),
        Some("nosniff"),
        "{path}"
    );
}

/// `analyze-trends compare base new --format FORMAT` of the fixture's two baselines.
fn compare(format: &str, server_url: Option<&str>) -> std::process::Output {
    let fixture = root().join("tests/fixtures/criterion-0.8");
    let scratch = tempfile::tempdir().unwrap();
    let mut command = std::process::Command::new(ANALYZE);
    command
        .args(["compare", "base", "new", "--criterion-dir"])
        .arg(&fixture)
        .arg("--results")
        .arg(scratch.path().join("none"))
        .args(["--format", format])
        .current_dir(scratch.path())
        .env_remove("STACKBENCH_CONFIG")
        .env_remove("STACKBENCH_SERVER_URL");
    if let Some(url) = server_url {
        command.env("STACKBENCH_SERVER_URL", url);
    }
    command.output().unwrap()
}

/// The comparison JSON `analyze-trends compare` writes, of the fixture's two baselines.
fn comparison_json() -> Vec<u8> {
    let out = compare("json", None);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "compare wrote no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(doc["schema"], "stackbench.comparison.v1");
    serde_json::to_vec_pretty(&doc).unwrap()
}

#[test]
fn every_page_and_endpoint_answers_with_the_same_model() {
    let scratch = tempfile::tempdir().unwrap();
    let run = recorded_run(scratch.path());
    let run_id = run["run_id"].as_str().unwrap().to_string();
    let bench_id = run["benchmarks"][0]["id"].as_str().unwrap().to_string();
    let server = Server::writable(&scratch.path().join("served"));

    let created = server.post_json("/api/runs", &bytes(&run));
    assert_eq!(created.status, 201, "{}", created.text());
    let body = created.json();
    assert_eq!(body["run_id"], run_id.as_str());
    assert_eq!(body["stored"], "new");
    assert_eq!(body["url"], format!("/runs/{run_id}"));

    let runs = server.get("/api/runs").json();
    assert_eq!(runs["page"], "runs");
    assert_eq!(runs["runs"].as_array().unwrap().len(), 1);
    assert_eq!(runs["runs"][0]["run_id"], run_id.as_str());
    let one = server.get(&format!("/api/runs/{run_id}")).json();
    assert_eq!(one["page"], "run");
    assert_eq!(one["run"]["run_id"], run_id.as_str());

    // Benchmark ids hold slashes: the history route takes the rest of the path.
    let history = server.get(&format!("/api/history/{bench_id}"));
    assert_eq!(history.status, 200, "{}", history.text());
    let history = history.json();
    assert_eq!(history["page"], "history");
    assert_eq!(history["bench_id"], bench_id.as_str());
    let points: Vec<&Value> = history["chart"]["series"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["points"].as_array().unwrap())
        .filter(|p| !p["y"].is_null())
        .collect();
    assert_eq!(points.len(), 1, "{history}");
    assert_eq!(points[0]["run"], run_id.as_str());

    let hardware = server.get("/api/hardware");
    assert_eq!(hardware.status, 200, "{}", hardware.text());
    assert!(hardware.json()["report"].is_object());

    let comparison = comparison_json();
    let posted = server.post_json("/api/comparisons", &comparison);
    assert_eq!(posted.status, 201, "{}", posted.text());
    let id = posted.json()["comparison_id"].as_i64().unwrap();
    assert_eq!(posted.json()["url"], format!("/comparisons/{id}"));
    // The same content again is the same comparison.
    let again = server.post_json("/api/comparisons", &comparison);
    assert_eq!(again.status, 200, "{}", again.text());
    assert_eq!(again.json()["comparison_id"].as_i64(), Some(id));
    let listed = server.get("/api/comparisons").json();
    assert_eq!(listed["comparisons"].as_array().unwrap().len(), 1);
    // The comparison page holds the rows of the comparison.json uploaded, in its order.
    let stored = server.get(&format!("/api/comparisons/{id}")).json();
    let original: Value = serde_json::from_slice(&comparison).unwrap();
    let ids = |rows: &Value| -> Vec<String> {
        rows.as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(stored["id"].as_i64(), Some(id));
    assert!(!ids(&original["comparisons"]).is_empty());
    assert_eq!(ids(&stored["rows"]), ids(&original["comparisons"]));

    let pages = [
        "/".to_string(),
        format!("/runs/{run_id}"),
        format!("/history/{bench_id}"),
        "/comparisons".to_string(),
        format!("/comparisons/{id}"),
        "/hardware".to_string(),
    ];
    for path in &pages {
        let page = server.get(path);
        assert_eq!(page.status, 200, "{path}: {}", page.text());
        assert!(
            page.header("content-type")
                .is_some_and(|t| t.starts_with("text/html")),
            "{path}"
        );
        assert_security_headers(path, &page);
        let html = page.text();
        let data = html
            .split("<script type=\"application/json\" id=\"page-data\">")
            .nth(1)
            .and_then(|rest| rest.split("</script>").next())
            .unwrap_or_else(|| panic!("{path}: no page data"));
        let mut data: Value = serde_json::from_str(data).unwrap_or_else(|e| panic!("{path}: {e}"));
        // The page data is the endpoint's model plus where the page's links point.
        assert_eq!(data["links"]["run"], "/runs/", "{path}");
        data.as_object_mut().unwrap().remove("links");
        // Its scripts come from this server.
        for asset in [
            "/assets/stackbench.js",
            "/assets/vendor/echarts/echarts.min.js",
        ] {
            assert!(
                html.contains(&format!("<script src=\"{asset}\">")),
                "{path}"
            );
        }
        let api = server.get(&format!("/api{}", if path == "/" { "/runs" } else { path }));
        assert_eq!(
            data,
            api.json(),
            "{path}: the page's data is its endpoint's model"
        );
        assert_security_headers(path, &api);
    }
}

#[test]
fn assets_come_from_the_binary_with_their_type_and_a_revalidating_etag() {
    let scratch = tempfile::tempdir().unwrap();
    let server = Server::writable(&scratch.path().join("served"));
    let js = server.get("/assets/stackbench.js");
    assert_eq!(js.status, 200);
    assert_eq!(
        js.header("content-type"),
        Some("text/javascript; charset=utf-8")
    );
    assert_eq!(js.header("cache-control"), Some("public, no-cache"));
    assert_security_headers("/assets/stackbench.js", &js);
    let echarts = server.get("/assets/vendor/echarts/echarts.min.js");
    assert_eq!(echarts.status, 200);
    assert!(echarts.text().contains("Apache"));
    let tag = js.header("etag").expect("an ETag").to_string();
    let again = server.request(
        "GET",
        "/assets/stackbench.js",
        &[("If-None-Match", &tag)],
        b"",
    );
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    for missing in [
        "/assets/nope.js",
        "/assets/../Cargo.toml",
        "/assets/%2E%2E/Cargo.toml",
    ] {
        let answer = server.get(missing);
        assert_eq!(answer.status, 404, "{missing}");
        assert!(!answer.text().contains("[package]"), "{missing}");
    }
}

#[test]
fn a_read_only_server_refuses_every_write_with_403_and_stores_nothing() {
    let scratch = tempfile::tempdir().unwrap();
    let run = recorded_run(scratch.path());
    // A read-only server serves an existing store only.
    let served = scratch.path().join("served");
    std::fs::create_dir_all(&served).unwrap();
    let server = Server::start(&served, &[]);
    for path in ["/api/runs", "/api/comparisons"] {
        let refused = server.post_json(path, &bytes(&run));
        assert_eq!(refused.status, 403, "{path}: {}", refused.text());
        assert!(
            refused.json()["error"]
                .as_str()
                .unwrap()
                .contains("read-only")
        );
    }
    assert!(stored_run_ids(&server).is_empty());
}

#[test]
fn a_missing_or_wrong_token_is_401_and_stores_nothing() {
    let scratch = tempfile::tempdir().unwrap();
    let run = bytes(&recorded_run(scratch.path()));
    let server = Server::writable(&scratch.path().join("served"));
    let json = ("Content-Type", "application/json");
    for headers in [
        vec![json],
        vec![json, ("Authorization", "Bearer wrong-token")],
        vec![json, ("Authorization", "Bearer test-token-012345678")],
        vec![json, ("Authorization", TOKEN)],
    ] {
        let refused = server.request("POST", "/api/runs", &headers, &run);
        assert_eq!(refused.status, 401, "{headers:?}: {}", refused.text());
        assert!(refused.json()["error"].is_string());
    }
    assert!(stored_run_ids(&server).is_empty());
}

#[test]
fn malformed_mistyped_oversized_and_conflicting_uploads_are_4xx_and_store_nothing() {
    let scratch = tempfile::tempdir().unwrap();
    let run = recorded_run(scratch.path());
    let served = scratch.path().join("served");
    let token_file = scratch.path().join("token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let limit = bytes(&run).len() + 1000;
    let server = Server::start(
        &served,
        &[
            "--write-token-file",
            token_file.to_str().unwrap(),
            "--max-upload-bytes",
            &limit.to_string(),
        ],
    );
    let reason = |r: &Response| r.json()["error"].as_str().unwrap_or_default().to_string();

    let mut not_a_run = run.clone();
    not_a_run["schema"] = "something.else.v1".into();
    let mut empty = run.clone();
    empty["benchmarks"] = Value::Array(Vec::new());
    empty["failed"] = Value::Array(Vec::new());
    let hostile_id = variant(&run, "../../etc/passwd", None);
    for (what, body) in [
        ("truncated JSON", bytes(&run)[..100].to_vec()),
        ("not a run", bytes(&not_a_run)),
        ("a run that measured nothing", bytes(&empty)),
        ("a run id that is a path", bytes(&hostile_id)),
    ] {
        let refused = server.post_json("/api/runs", &body);
        assert_eq!(refused.status, 400, "{what}: {}", refused.text());
        assert!(
            reason(&refused).contains("not a valid run file"),
            "{what}: {}",
            reason(&refused)
        );
    }

    let auth = format!("Bearer {TOKEN}");
    let mistyped = server.request(
        "POST",
        "/api/runs",
        &[("Authorization", &auth), ("Content-Type", "text/plain")],
        &bytes(&run),
    );
    assert_eq!(mistyped.status, 415, "{}", mistyped.text());

    // Declared too large: refused before the body is read (none is sent).
    let declared = server.request(
        "POST",
        "/api/runs",
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
            ("Content-Length", "33554432"),
        ],
        b"",
    );
    assert_eq!(declared.status, 413, "{}", declared.text());
    assert!(reason(&declared).contains(&limit.to_string()));
    // Too large without a declared length: chunked, over the limit.
    let mut padded = run.clone();
    padded["notes"] = Value::Array(vec![Value::String("x".repeat(2000))]);
    let body = bytes(&padded);
    let chunked = format!("{:x}\r\n", body.len()).into_bytes();
    let chunked: Vec<u8> = [chunked, body, b"\r\n0\r\n\r\n".to_vec()].concat();
    let streamed = server.request(
        "POST",
        "/api/runs",
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
            ("Transfer-Encoding", "chunked"),
        ],
        &chunked,
    );
    assert_eq!(streamed.status, 413, "{}", streamed.text());
    assert!(stored_run_ids(&server).is_empty());

    // The same id from other hardware is another run: 409, and the first one stays.
    assert_eq!(server.post_json("/api/runs", &bytes(&run)).status, 201);
    let other = variant(
        &run,
        run["run_id"].as_str().unwrap(),
        Some("cpu=other x8;gpu=none"),
    );
    let conflict = server.post_json("/api/runs", &bytes(&other));
    assert_eq!(conflict.status, 409, "{}", conflict.text());
    assert!(reason(&conflict).contains("cpu=other x8"));
    assert_eq!(
        stored_run_ids(&server),
        vec![run["run_id"].as_str().unwrap()]
    );
}

#[test]
fn the_same_run_uploaded_concurrently_is_one_run() {
    let scratch = tempfile::tempdir().unwrap();
    let run = bytes(&recorded_run(scratch.path()));
    let server = Server::writable(&scratch.path().join("served"));
    let statuses: Vec<u16> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| s.spawn(|| server.post_json("/api/runs", &run).status))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        7,
        "{statuses:?}"
    );
    assert_eq!(stored_run_ids(&server).len(), 1);
}

#[test]
fn unknown_runs_benchmarks_and_paths_are_404s_naming_them_as_text() {
    let scratch = tempfile::tempdir().unwrap();
    let run = recorded_run(scratch.path());
    let server = Server::writable(&scratch.path().join("served"));
    assert_eq!(server.post_json("/api/runs", &bytes(&run)).status, 201);

    let missing_run = server.get("/api/runs/20990101T000000000Z-p1-0000");
    assert_eq!(missing_run.status, 404);
    assert!(
        missing_run.json()["error"]
            .as_str()
            .unwrap()
            .contains("20990101T000000000Z-p1-0000")
    );
    let missing_bench = server.get("/api/history/gemm/no-such-benchmark");
    assert_eq!(missing_bench.status, 404);
    assert!(
        missing_bench.json()["error"]
            .as_str()
            .unwrap()
            .contains("gemm/no-such-benchmark")
    );
    assert_eq!(server.get("/api/comparisons/12345").status, 404);
    assert_eq!(server.get("/api/nothing-here").status, 404);
    assert!(server.get("/api/nothing-here").json()["error"].is_string());

    // Hostile segments come back as text: escaped in a page, never markup.
    let hostile = "/history/%3Cscript%3Ealert(1)%3C%2Fscript%3E";
    let page = server.get(hostile);
    assert_eq!(page.status, 404);
    assert_security_headers(hostile, &page);
    let html = page.text();
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{html}"
    );
    assert!(!html.contains("<script>alert(1)"), "{html}");
    let run_page = server.get("/runs/%22%3E%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E");
    assert_eq!(run_page.status, 404);
    assert!(!run_page.text().contains("<img"), "{}", run_page.text());
    // A path that climbs out is a 404 of the store, never a file of the server's disk.
    let climb = server.get("/api/runs/..%2F..%2F..%2Fetc%2Fpasswd.json");
    assert_eq!(climb.status, 404);
    assert!(!climb.text().contains("root:"));
}

#[test]
fn an_unopenable_store_at_start_is_exit_2_naming_it_without_its_password() {
    let scratch = tempfile::tempdir().unwrap();
    let out = run(
        STACKBENCH,
        &[
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--store",
            "postgres://bench:hunter2@127.0.0.1:1/stackbench",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("postgres://bench:***@127.0.0.1:1/stackbench"),
        "{stderr}"
    );
    assert!(!stderr.contains("hunter2"), "{stderr}");

    // Read-only over a directory that does not exist: nothing to serve, nothing created.
    let missing = scratch.path().join("missing");
    let out = run(
        STACKBENCH,
        &[
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--results",
            missing.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not exist"));
    assert!(!missing.exists());

    // An empty token file is refused, not taken as "no token".
    let empty = scratch.path().join("empty-token");
    std::fs::write(&empty, "\n").unwrap();
    let out = run(
        STACKBENCH,
        &[
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--write-token-file",
            empty.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("empty"));
}

#[test]
fn the_pr_comment_links_to_the_comparison_page_once_its_json_is_uploaded() {
    let scratch = tempfile::tempdir().unwrap();
    let server = Server::writable(&scratch.path().join("served"));
    let base = format!("http://127.0.0.1:{}", server.port);

    let plain = String::from_utf8_lossy(&compare("markdown", None).stdout).into_owned();
    assert!(!plain.contains("/comparisons/"), "{plain}");
    let comment = compare("markdown", Some(&format!("{base}/")));
    let comment = String::from_utf8_lossy(&comment.stdout).into_owned();
    let link = comment
        .split(&format!("]({base}"))
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap_or_else(|| panic!("no dashboard link in the comment:\n{comment}"))
        .to_string();
    assert!(link.starts_with("/comparisons/sha256-"), "{link}");
    // The link is there before the upload, under the verdict, and resolves after it.
    assert!(comment.find(&link) < comment.find("| Status"), "{comment}");
    assert_eq!(server.get(&link).status, 404);
    let posted = server.post_json("/api/comparisons", &comparison_json());
    assert_eq!(posted.status, 201, "{}", posted.text());
    assert_eq!(
        posted.json()["checksum"],
        link.trim_start_matches("/comparisons/")
    );
    let page = server.get(&link);
    assert_eq!(page.status, 200, "{}", page.text());
    let api = server.get(&format!("/api{link}"));
    assert_eq!(api.json()["id"], posted.json()["comparison_id"]);

    // A setting that would break the link is a warning, and the comment has no link.
    let bad = compare("markdown", Some("javascript:alert(1)"));
    assert!(bad.status.code().is_some_and(|c| c != 101 && c != 2));
    assert!(!String::from_utf8_lossy(&bad.stdout).contains("javascript:"));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("STACKBENCH_SERVER_URL"));
}
