//! `hrr report`: findings written by hand in the documented shape (DESIGN
//! §6, as `hrr triage --format json` and `--format jsonl` write them) are
//! grouped by crash signature, whatever their pid or path and the
//! MULTI-PROCESS / BUILD-NEEDED labels; the JSON, CSV, markdown and HTML
//! shapes; a file that is no finding is one warning; no finding at all is
//! one error and no output.

mod common;

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{stderr, stdout, Sandbox};
use serde_json::{json, Value};

/// A kernel name as templated C++ makes them: `<`, `>`, `&`, `,`, `|`.
const TEMPLATED: &str =
    "void gemm<float, &scale, (Layout)1>(float const*, float*) [with T = float | U = int]";

/// One finding as triage writes it, with the fields the report reads.
fn finding(archive: &str, outcome: &str, class: &str, kernel: Option<&str>) -> Value {
    json!({
        "schema_version": 1,
        "archive": archive,
        "outcome": outcome,
        "fault_class": class,
        "cause": null,
        "kernel_name": kernel,
        "kernel_source": kernel.map(|_| "fault_line"),
        "fault_address": "0x7f91da001000",
        "failing_api": null,
        "archive_health": {
            "complete": false, "trailer": false, "truncated": false, "recovered_events": 5,
            "events": 5, "kernel_launches": 1, "blobs": 1, "code_objects": 1, "threads": 1,
            "processes": [4243], "events_modified": null
        },
        "labels": [],
        "next_steps": [],
        "sources": [],
        "notes": []
    })
}

fn with_labels(mut f: Value, labels: &[&str]) -> Value {
    f["labels"] = labels
        .iter()
        .map(|l| json!({"label": l, "detail": "seen"}))
        .collect();
    f
}

fn modified(mut f: Value, at: &str) -> Value {
    f["archive_health"]["events_modified"] = json!(at);
    f
}

/// Writes `f` pretty-printed, as `hrr triage -o` does.
fn save(sb: &Sandbox, rel: &str, f: &Value) {
    sb.write(rel, &serde_json::to_string_pretty(f).unwrap());
}

/// The same memory fault in the same kernel, captured five times on
/// different nodes and pids, two of them in roots of several processes or
/// with a player built for the run; a sixth with one more label; a hang.
fn night(sb: &Sandbox) {
    let maf = |archive: &str| finding(archive, "MAF", "illegal_memory_access", Some(TEMPLATED));
    save(
        sb,
        "night/n1/a.finding.json",
        &modified(
            with_labels(maf("/caps/n1/run.hrr/pid-4243"), &["MULTI-PROCESS"]),
            "2026-11-30T21:00:00Z",
        ),
    );
    save(
        sb,
        "night/n2/b.finding.json",
        &modified(
            with_labels(maf("/caps/n2/run.hrr/pid-77"), &["BUILD-NEEDED"]),
            "2026-12-01T03:15:00Z",
        ),
    );
    let lines = [
        modified(maf("/caps/n3/run.hrr/pid-9"), "2026-12-01T01:00:00Z"),
        maf("/caps/n0/run.hrr/pid-12"),
        modified(maf("/caps/n4/other.hrr/pid-5"), "2026-11-30T23:59:59Z"),
        modified(
            with_labels(maf("/caps/n5/run.hrr/pid-6"), &["STALE-POINTER"]),
            "2026-12-01T00:00:00Z",
        ),
        finding("/caps/n6/run.hrr/pid-1", "HANG", "hang", None),
    ];
    let text: Vec<String> = lines.iter().map(|f| f.to_string()).collect();
    sb.write("night/stream.jsonl", &(text.join("\n") + "\n"));
}

fn report(sb: &Sandbox, args: &[&str]) -> std::process::Output {
    let out = sb.hrr().arg("report").args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    out
}

fn json_report(sb: &Sandbox, args: &[&str]) -> Value {
    let out = report(sb, &[args, &["--format", "json"]].concat());
    serde_json::from_str(&stdout(&out)).unwrap()
}

#[test]
fn findings_that_differ_only_in_pid_path_and_run_labels_are_one_group() {
    let sb = Sandbox::new();
    night(&sb);
    let r = json_report(&sb, &["night"]);
    assert_eq!(r["schema_version"], 1);
    assert_eq!(
        (r["findings"].as_u64(), r["files"].as_u64()),
        (Some(7), Some(3))
    );
    let groups = r["groups"].as_array().unwrap();
    let counts: Vec<u64> = groups
        .iter()
        .map(|g| g["count"].as_u64().unwrap())
        .collect();
    assert_eq!(counts, [5, 1, 1], "largest first");
    let big = &groups[0];
    assert_eq!(
        big["signature"],
        json!({"outcome": "MAF", "fault_class": "illegal_memory_access",
               "kernel_name": TEMPLATED, "failing_api": null, "labels": []})
    );
    assert_eq!(
        big["examples"],
        json!([
            "/caps/n0/run.hrr/pid-12",
            "/caps/n1/run.hrr/pid-4243",
            "/caps/n2/run.hrr/pid-77"
        ]),
        "three, byte-sorted"
    );
    assert_eq!(big["oldest"], "2026-11-30T21:00:00Z");
    assert_eq!(big["newest"], "2026-12-01T03:15:00Z");
    assert_eq!(big["fault_classes"], json!(["illegal_memory_access"]));
    assert_eq!(big["labels"], json!(["BUILD-NEEDED", "MULTI-PROCESS"]));
    // Same count: the HANG signature sorts before the MAF one.
    assert_eq!(groups[1]["signature"]["outcome"], "HANG");
    assert_eq!(groups[1]["oldest"], Value::Null, "no time, no archive here");
    assert_eq!(groups[2]["signature"]["labels"], json!(["STALE-POINTER"]));
    assert_eq!(
        r["outcomes"],
        json!([{"outcome": "MAF", "count": 6}, {"outcome": "HANG", "count": 1}])
    );
}

#[test]
fn csv_is_one_row_per_group_with_the_kernel_whole() {
    let sb = Sandbox::new();
    night(&sb);
    let out = report(&sb, &["night", "--format", "csv"]);
    let mut rows = csv::Reader::from_reader(out.stdout.as_slice());
    let header: Vec<String> = rows.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(
        header,
        [
            "count",
            "outcome",
            "fault_class",
            "kernel_name",
            "failing_api",
            "labels",
            "also_seen",
            "fault_classes",
            "examples",
            "oldest",
            "newest"
        ]
    );
    let rows: Vec<csv::StringRecord> = rows.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 3);
    let first = &rows[0];
    assert_eq!(&first[0], "5");
    assert_eq!(
        &first[3], TEMPLATED,
        "commas and quotes survive a CSV reader"
    );
    assert_eq!(&first[6], "BUILD-NEEDED MULTI-PROCESS");
    assert_eq!(first[8].lines().count(), 3);
    assert_eq!(&first[9], "2026-11-30T21:00:00Z");
    assert_eq!(&rows[1][3], "", "no kernel: an empty cell");
}

/// A kernel name (from an archive) that a spreadsheet would evaluate as a
/// formula reaches the CSV as text, with a leading `'`; a plain name is
/// left alone.
#[test]
fn a_kernel_name_shaped_like_a_formula_is_text_in_csv() {
    let sb = Sandbox::new();
    let formula = "=HYPERLINK(\"http://x.invalid\",\"open\")";
    save(
        &sb,
        "f/a.finding.json",
        &finding("/c/a.hrr", "MAF", "illegal_memory_access", Some(formula)),
    );
    save(
        &sb,
        "f/b.finding.json",
        &finding("/c/b.hrr", "MAF", "illegal_memory_access", Some("@sum")),
    );
    save(
        &sb,
        "f/c.finding.json",
        &finding(
            "/c/c.hrr",
            "MAF",
            "illegal_memory_access",
            Some("crash_oob"),
        ),
    );
    let out = report(&sb, &["f", "--format", "csv"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut rows = csv::Reader::from_reader(out.stdout.as_slice());
    let mut kernels: Vec<String> = rows.records().map(|r| r.unwrap()[3].to_string()).collect();
    kernels.sort();
    assert_eq!(
        kernels,
        [
            format!("'{formula}"),
            "'@sum".to_string(),
            "crash_oob".to_string()
        ]
    );
}

/// The cells of each table row of `md`, as a CommonMark (GFM) reader sees them.
fn table_rows(md: &str) -> Vec<Vec<String>> {
    use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
    let mut rows = Vec::new();
    let mut row: Vec<String> = Vec::new();
    let mut cell = String::new();
    for event in Parser::new_ext(md, Options::ENABLE_TABLES) {
        match event {
            Event::Start(Tag::TableRow) | Event::Start(Tag::TableHead) => row.clear(),
            Event::End(TagEnd::TableCell) => row.push(std::mem::take(&mut cell)),
            Event::End(TagEnd::TableRow) | Event::End(TagEnd::TableHead) => {
                rows.push(std::mem::take(&mut row))
            }
            Event::Text(t) | Event::Code(t) => cell.push_str(&t),
            Event::Html(h) | Event::InlineHtml(h) => panic!("raw HTML in the report: {h}"),
            _ => {}
        }
    }
    rows
}

#[test]
fn markdown_has_totals_outcomes_and_a_table_a_reader_keeps_whole() {
    let sb = Sandbox::new();
    night(&sb);
    let md = stdout(&report(&sb, &["night"]));
    assert!(md.contains("7 findings from 3 files in 3 groups\n"), "{md}");
    assert!(md.contains("Outcomes: MAF 6, HANG 1\n"), "{md}");
    let rows = table_rows(&md);
    assert_eq!(rows.len(), 4, "a header and three groups: {rows:?}");
    assert_eq!(rows[0][3], "kernel");
    for row in &rows {
        assert_eq!(
            row.len(),
            10,
            "the `|` in the kernel splits no cell: {row:?}"
        );
    }
    assert_eq!(rows[1][0], "5");
    assert_eq!(rows[1][3], TEMPLATED);
    assert_eq!(rows[1][6], "BUILD-NEEDED MULTI-PROCESS");
    assert_eq!(rows[2][3], "n/a");
}

#[test]
fn html_escapes_every_name_and_needs_nothing_from_outside() {
    let sb = Sandbox::new();
    let hostile = "k<T>&x</td></tr></table><script>alert(1)</script><img src=x onerror=alert(2)>";
    save(
        &sb,
        "one.finding.json",
        &finding(
            "/caps/<b>bold</b>&amp;/pid-1",
            "MAF",
            "illegal_memory_access",
            Some(hostile),
        ),
    );
    let page = sb.path().join("report.html");
    report(
        &sb,
        &[
            "one.finding.json",
            "--format",
            "html",
            "-o",
            page.to_str().unwrap(),
        ],
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
    assert!(
        html.contains("k&lt;T&gt;&amp;x&lt;/td&gt;&lt;/tr&gt;&lt;/table&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;"),
        "{html}"
    );
    assert!(
        html.contains("/caps/&lt;b&gt;bold&lt;/b&gt;&amp;amp;/pid-1"),
        "{html}"
    );
    for tag in ["<script", "<img", "<b>", "<link", "<iframe"] {
        assert!(!html.contains(tag), "{tag} in the page");
    }
    assert_eq!(html.matches("<table").count(), 1);
    for outside in ["http://", "https://", "src=\"", "@import", "url("] {
        assert!(
            !html.contains(outside),
            "{outside}: the page must work offline"
        );
    }
}

#[test]
fn a_file_that_is_no_finding_is_one_warning_and_skipped() {
    let sb = Sandbox::new();
    night(&sb);
    sb.write(
        "night/n1/info.finding.json",
        r#"{"schema_version": 1, "kind": "process"}"#,
    );
    sb.write("night/notes.md", "not read: not a finding file name");
    let out = report(&sb, &["night", "--format", "json"]);
    let err = stderr(&out);
    let warnings: Vec<&str> = err.lines().collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].starts_with("warning: skipped "), "{warnings:?}");
    assert!(
        warnings[0].contains("night/n1/info.finding.json"),
        "{warnings:?}"
    );
    let r: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(r["findings"], 7);
    assert_eq!(r["files"], 4);
    assert_eq!(
        r["skipped"][0]["reason"],
        "not a finding: no `outcome` field"
    );
}

#[test]
fn no_finding_at_all_is_one_error_and_nothing_written() {
    let sb = Sandbox::new();
    sb.write("empty/x.finding.json", "[]");
    sb.write(
        "empty/y.jsonl",
        "{\"schema_version\": 2, \"outcome\": \"MAF\", \"fault_class\": \"hang\"}\n",
    );
    let target = sb.path().join("out.md");
    let out = sb
        .hrr()
        .args(["report", "empty", "-o", target.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "");
    let err = stderr(&out);
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert!(
        errors[0].contains("no finding in 2 file(s) read from empty"),
        "{err}"
    );
    assert_eq!(
        err.lines().filter(|l| l.starts_with("warning:")).count(),
        2,
        "{err}"
    );
    assert!(!target.exists(), "nothing half-written");

    let missing = sb.hrr().args(["report", "nowhere"]).output().unwrap();
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        stderr(&missing).starts_with("error: cannot read nowhere"),
        "{}",
        stderr(&missing)
    );
}

#[test]
fn json_lines_on_stdin_are_read_as_a_dash() {
    let sb = Sandbox::new();
    let lines = [
        finding("/c/pid-1", "HANG", "hang", None).to_string(),
        finding("/c/pid-2", "HANG", "hang", None).to_string(),
    ];
    let out = sb
        .hrr()
        .args(["report", "-", "--format", "json"])
        .write_stdin(lines.join("\n"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(r["groups"][0]["count"], 2);
    assert_eq!(r["files"], 1);
}

fn set_mtime(path: &Path, at: SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(at)
        .unwrap();
}

#[test]
fn without_a_recorded_time_events_bin_is_asked_for_each_process() {
    let sb = Sandbox::new();
    let root = sb.path().join("caps/run.hrr");
    let day = |secs: u64| UNIX_EPOCH + Duration::from_secs(secs);
    for (pid, at) in [("pid-1", 1_700_000_000), ("pid-2", 1_700_086_400)] {
        std::fs::create_dir_all(root.join(pid)).unwrap();
        let events = root.join(pid).join("events.bin");
        std::fs::write(&events, b"EHRR").unwrap();
        set_mtime(&events, day(at));
    }
    let of_root = finding(root.to_str().unwrap(), "ABORT", "replay_aborted", None);
    let of_process = finding(
        root.join("pid-1").to_str().unwrap(),
        "ABORT",
        "replay_aborted",
        None,
    );
    save(&sb, "f/root.finding.json", &of_root);
    save(&sb, "f/one.finding.json", &of_process);
    let r = json_report(&sb, &["f"]);
    let g = &r["groups"][0];
    assert_eq!(g["count"], 2);
    assert_eq!(g["oldest"], "2023-11-14T22:13:20Z");
    assert_eq!(g["newest"], "2023-11-15T22:13:20Z");
}

/// A composable-kernel GEMM as the runtime names it: 400 characters of
/// templates, wrapping only where the page lets it.
fn long_kernel() -> String {
    let mut name = String::from(
        "void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm_xdl_cshuffle_v3<ck::tensor_layout::gemm::RowMajor, ck::tensor_layout::gemm::ColumnMajor, ck::half_t, float, ck::tensor_operation::element_wise::PassThrough, 256, 128, 128, 64, 8, 8>, true, (ck::InMemoryDataOperationEnum)0, 2>(",
    );
    name.push_str(&"ck::Argument const&, ".repeat(4));
    name.push_str("ck::half_t const*, ck::half_t*, int)");
    name
}

/// The python that runs tests/report/layout.py, with Playwright importable;
/// a missing one fails the test: CI installs it with Debian's chromium.
fn playwright_python() -> std::path::PathBuf {
    const INSTALL: &str = "apt-get install chromium; python3 -m pip install playwright";
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys, playwright; print(sys.executable)"])
        .output()
        .unwrap_or_else(|e| panic!("python3 is needed for the browser test ({e}); then {INSTALL}"));
    assert!(
        out.status.success(),
        "the browser test needs Python's playwright package: {INSTALL}\n{}",
        stderr(&out)
    );
    assert!(
        Path::new("/usr/bin/chromium").is_file(),
        "the browser test needs Debian's chromium: {INSTALL}"
    );
    stdout(&out).trim().into()
}

#[test]
fn the_html_page_lays_out_in_a_real_browser() {
    let sb = Sandbox::new();
    let long = long_kernel();
    assert_eq!(long.len(), 400);
    let mangled = format!("_ZN2ck{}Ev", "27kernel_gemm_xdl_cshuffle_v3I".repeat(8));
    let groups: [(usize, &str, &str, Option<&str>); 7] = [
        (9, "MAF", "illegal_memory_access", Some(&long)),
        (4, "MAF", "read_only_page_fault", Some(&mangled)),
        (5, "PASS", "replay_pass", Some("vector_add<float>")),
        (3, "HANG", "hang", Some("spin_forever(int*)")),
        (2, "ABORT", "replay_fatal_api", None),
        (
            1,
            "FAIL",
            "nan_inf_divergence",
            Some("softmax<__half, 1024>"),
        ),
        (1, "UNKNOWN", "unknown", None),
    ];
    let mut lines = Vec::new();
    for (g, (n, outcome, class, kernel)) in groups.iter().enumerate() {
        for i in 0..*n {
            let archive = format!("/lab/node{i:02}/suite-{g}.hrr/pid-{}", 4000 + i);
            let f = modified(
                finding(&archive, outcome, class, *kernel),
                &format!("2026-11-{:02}T0{g}:00:00Z", 10 + i),
            );
            lines.push(f.to_string());
        }
    }
    sb.write("night.jsonl", &lines.join("\n"));
    let page = sb.path().join("report.html");
    report(
        &sb,
        &[
            "night.jsonl",
            "--format",
            "html",
            "-o",
            page.to_str().unwrap(),
        ],
    );

    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-html");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/report/layout.py");
    let out = std::process::Command::new(playwright_python())
        .arg(script)
        .arg(&page)
        .arg(&shots)
        .args(["1280", "800"])
        .output()
        .unwrap();
    assert!(out.status.success(), "layout.py failed:\n{}", stderr(&out));
    let m: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(m["fetched"], json!([]), "the page fetches nothing");
    for width in ["1280", "800"] {
        let w = &m["widths"][width];
        let at = |what: &str| format!("at {width}px: {what}\n{w:#}");
        let num = |v: &Value| v.as_f64().unwrap();
        assert!(
            num(&w["scroll_width"]) <= num(&w["client_width"]),
            "{}",
            at("the page scrolls sideways")
        );
        let table = &w["table"];
        assert!(
            table["visibility"] == "visible" && table["display"] == "table",
            "{}",
            at("the table is hidden")
        );
        assert!(
            num(&table["height"]) > 100.0,
            "{}",
            at("the table has no rows")
        );
        assert!(
            num(&table["left"]) >= 0.0 && num(&table["right"]) <= num(&w["client_width"]),
            "{}",
            at("the table leaves the page")
        );
        let mut bars: Vec<(u64, f64)> = w["bars"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| (b["count"].as_u64().unwrap(), num(&b["width"])))
            .collect();
        assert_eq!(bars.len(), 6, "{}", at("one bar per outcome"));
        bars.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
        for pair in bars.windows(2) {
            let ((c0, w0), (c1, w1)) = (pair[0], pair[1]);
            if c0 == c1 {
                assert!(
                    (w0 - w1).abs() < 0.5,
                    "{}",
                    at("equal counts, unequal bars")
                );
            } else {
                assert!(w1 > w0 + 1.0, "{}", at("a larger count, no longer bar"));
            }
        }
        let (most, widest) = bars[bars.len() - 1];
        let (least, narrowest) = bars[0];
        let ratio = (narrowest / widest) / (least as f64 / most as f64);
        assert!(
            (0.9..1.1).contains(&ratio),
            "{}",
            at("bars not proportional")
        );
        let k = &w["long_kernel"];
        assert_eq!(k["text_length"], 400, "{}", at("the long name is cut"));
        assert!(
            k["lines"].as_u64().unwrap() >= 3,
            "{}",
            at("the long name does not wrap")
        );
        assert!(
            num(&k["code_right"]) <= num(&k["cell"]["right"]) + 0.5,
            "{}",
            at("the long name runs out of its cell")
        );
        for cell in w["kernel_cells"].as_array().unwrap() {
            assert!(
                num(&cell["scroll_width"]) <= num(&cell["client_width"]),
                "{}",
                at("a kernel cell overflows")
            );
        }
        assert!(shots.join(format!("report-{width}.png")).is_file());
    }
}
