//! `hrr schema finding|archive-info|preflight|events|report`: real outputs of `hrr` on the
//! example archive and a recorded replay log validate against the printed
//! schemas, and a document with a field of the wrong type does not.

mod common;

use std::path::PathBuf;

use common::{stdout, Sandbox};
use serde_json::{json, Value};

fn examples() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/crash.hrr"))
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/fixtures")).join(name)
}

/// The schema `hrr schema <document>` prints, compiled.
fn validator(sb: &Sandbox, document: &str) -> jsonschema::Validator {
    let out = sb.hrr().args(["schema", document]).output().unwrap();
    assert!(out.status.success(), "hrr schema {document} failed");
    let schema: Value = serde_json::from_str(&stdout(&out)).expect("the schema is JSON");
    assert_eq!(
        schema["$schema"], "https://json-schema.org/draft/2020-12/schema",
        "{document}: a draft 2020-12 schema"
    );
    jsonschema::validator_for(&schema).expect("the schema compiles")
}

/// The JSON `hrr args…` prints on stdout (whatever its exit code).
fn output_of(sb: &Sandbox, args: &[&str]) -> Value {
    let out = sb.hrr().args(args).output().unwrap();
    serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("hrr {args:?} printed no JSON ({e}): {}", stdout(&out)))
}

/// The validation errors of `doc`, as `path: message` lines.
fn errors(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

fn assert_valid(v: &jsonschema::Validator, doc: &Value, what: &str) {
    let errs = errors(v, doc);
    assert!(
        errs.is_empty(),
        "{what} does not match its schema:\n{}",
        errs.join("\n")
    );
}

#[test]
fn archive_info_of_both_processes_and_the_root_match_the_schema() {
    let sb = Sandbox::new();
    let v = validator(&sb, "archive-info");
    for pid in ["pid-4243", "pid-4242"] {
        let dir = examples().join(pid);
        let doc = output_of(&sb, &["archive", "info", "--json", dir.to_str().unwrap()]);
        assert_eq!(doc["kind"], "process");
        assert_valid(&v, &doc, pid);
    }
    let root = output_of(
        &sb,
        &["archive", "info", "--json", examples().to_str().unwrap()],
    );
    assert_eq!(root["kind"], "root", "the example root holds two processes");
    assert_valid(&v, &root, "the capture root listing");
}

#[test]
fn triage_and_classify_findings_match_the_finding_schema() {
    let sb = Sandbox::new();
    let v = validator(&sb, "finding");
    let triaged = output_of(
        &sb,
        &[
            "triage",
            examples().to_str().unwrap(),
            "--no-replay",
            "--format",
            "json",
        ],
    );
    assert_eq!(triaged["fault_class"], "metadata_only");
    assert_valid(&v, &triaged, "the triage finding");

    let every = output_of(
        &sb,
        &[
            "triage",
            examples().to_str().unwrap(),
            "--no-replay",
            "--all",
            "--format",
            "json",
        ],
    );
    let every = every.as_array().expect("--all prints an array of findings");
    assert_eq!(every.len(), 2, "pid-4242 and pid-4243");
    for f in every {
        assert_valid(&v, f, "a finding of triage --all");
    }

    let log = fixture("replay_pass.log");
    let classified = output_of(
        &sb,
        &[
            "classify",
            "--log",
            log.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    assert_eq!(classified["outcome"], "PASS");
    assert_valid(&v, &classified, "the classify finding");
}

#[test]
fn preflight_report_matches_the_preflight_schema() {
    let sb = Sandbox::new();
    let v = validator(&sb, "preflight");
    let dir = examples().join("pid-4243");
    let report = output_of(&sb, &["preflight", dir.to_str().unwrap(), "--json"]);
    assert!(report["capture"]["metadata"].as_bool().is_some());
    assert_valid(&v, &report, "the preflight report");
}

#[test]
fn every_archive_events_line_matches_the_events_schema() {
    let sb = Sandbox::new();
    let v = validator(&sb, "events");
    for pid in ["pid-4243", "pid-4242"] {
        let dir = examples().join(pid);
        let out = sb
            .hrr()
            .args(["archive", "events", "--json", dir.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(out.status.success(), "hrr archive events {pid} failed");
        let lines: Vec<Value> = stdout(&out)
            .lines()
            .map(|l| serde_json::from_str(l).expect("each line is JSON"))
            .collect();
        assert!(lines.len() > 1, "{pid} has events");
        assert!(
            lines.iter().any(|e| e.as_object().unwrap().len() > 7),
            "{pid}: some event carries decoded payload fields"
        );
        for event in &lines {
            assert_valid(&v, event, &format!("{pid} event {}", event["seq"]));
        }
        let mut seq_as_text = lines[0].clone();
        seq_as_text["seq"] = json!("0");
        assert!(!errors(&v, &seq_as_text).is_empty(), "seq as a string");
        let mut no_api = lines[0].clone();
        no_api.as_object_mut().unwrap().remove("api");
        assert!(!errors(&v, &no_api).is_empty(), "an event without its API");
    }
}

#[test]
fn a_report_of_triaged_findings_matches_the_report_schema() {
    let sb = Sandbox::new();
    let v = validator(&sb, "report");
    let every = sb
        .hrr()
        .args(["triage", "--no-replay", "--all", "--format", "json"])
        .arg(examples())
        .output()
        .unwrap();
    sb.write("night/all.finding.json", &stdout(&every));
    sb.write("night/junk.finding.json", "{}");
    let report = output_of(&sb, &["report", "night", "--format", "json"]);
    assert_eq!(report["findings"], 2, "{report}");
    assert_eq!(report["skipped"].as_array().map(Vec::len), Some(1));
    assert_valid(&v, &report, "the report");
    let mut count = report.clone();
    count["groups"][0]["count"] = json!("2");
    assert!(!errors(&v, &count).is_empty(), "a count as a string");
    let mut label = report;
    label["groups"][0]["signature"]["labels"] = json!(["CRASHY"]);
    assert!(!errors(&v, &label).is_empty(), "an unknown label");
}

#[test]
fn every_document_is_declared_an_object() {
    let sb = Sandbox::new();
    for document in ["finding", "archive-info", "preflight", "events", "report"] {
        let out = sb.hrr().args(["schema", document]).output().unwrap();
        let schema: Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(
            schema["type"], "object",
            "{document}: MCP clients drop an output schema whose root is not an object"
        );
    }
}

#[test]
fn a_field_of_the_wrong_type_fails_validation() {
    let sb = Sandbox::new();
    let info = validator(&sb, "archive-info");
    let dir = examples().join("pid-4243");
    let good = output_of(&sb, &["archive", "info", "--json", dir.to_str().unwrap()]);
    assert_valid(&info, &good, "pid-4243");

    let mut events_as_text = good.clone();
    events_as_text["events"] = json!(events_as_text["events"].to_string());
    assert!(
        !errors(&info, &events_as_text).is_empty(),
        "events as a string"
    );

    let mut bad_kernel = good.clone();
    bad_kernel["kernels"][0]["launches"] = json!(-1);
    assert!(!errors(&info, &bad_kernel).is_empty(), "a negative count");

    let mut no_state = good;
    no_state.as_object_mut().unwrap().remove("state");
    assert!(!errors(&info, &no_state).is_empty(), "a missing field");

    let finding = validator(&sb, "finding");
    let log = fixture("replay_pass.log");
    let good = output_of(
        &sb,
        &[
            "classify",
            "--log",
            log.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    let mut outcome = good.clone();
    outcome["outcome"] = json!("CRASHED");
    assert!(!errors(&finding, &outcome).is_empty(), "an unknown outcome");
    let mut version = good.clone();
    version["schema_version"] = json!(2);
    assert!(
        !errors(&finding, &version).is_empty(),
        "another schema version"
    );
    let mut preflight = good.clone();
    preflight["preflight"] = json!("ok");
    assert!(
        !errors(&finding, &preflight).is_empty(),
        "a preflight that is no report"
    );
    let mut labels = good;
    labels["labels"] = json!(["CLEAN"]);
    assert!(
        !errors(&finding, &labels).is_empty(),
        "labels as bare strings"
    );
}

#[test]
fn an_unknown_document_is_refused() {
    let sb = Sandbox::new();
    let out = sb.hrr().args(["schema", "bundle"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "a bad argument (DESIGN §3.1)");
    assert!(
        common::stderr(&out).contains("finding"),
        "lists the documents"
    );
}

/// The finding fields (DESIGN §6) for why a replay failed and what it
/// loaded: `cause`, `kernel_source: not_found_line` and `replay.loaded` are
/// in the schema, and a finding that carries them validates while a cause
/// of an unknown kind does not.
#[test]
fn cause_not_found_line_and_loaded_are_in_the_finding_schema() {
    let sb = Sandbox::new();
    let v = validator(&sb, "finding");
    let log = sb.write(
        "replay.log",
        "[HRR] Device  : AMD Instinct MI300X (gfx942:sramecc+:xnack-)\n\
         [HRR] Runtime : /opt/rocm/lib/libamdhip64.so.7\n\
         [HRR] Code object 5f3c0a1b not found in archive\n\
         [HRR] Kernel 'k' not found in any loaded module\n\
         [HRR] Fatal: T1 Event 4 (hipModuleLaunchKernel) returned 500 (named symbol not found) — aborting replay\n",
    );
    let f = output_of(
        &sb,
        &[
            "classify",
            "--log",
            log.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    assert_eq!(f["cause"]["kind"], "archive_incomplete");
    assert_eq!(f["kernel_source"], "not_found_line");
    assert_valid(&v, &f, "a finding with a cause");
    let mut with_replay = f.clone();
    // Built from the type, so a field added to the replay record later is
    // in it too.
    with_replay["replay"] = serde_json::to_value(hrr::finding::ReplayInfo {
        mode: Some("native".into()),
        command: vec!["hrr-playback".into(), "/a/pid-1".into()],
        loaded: vec![hrr::finding::LoadedLine {
            label: "Device".into(),
            value: "AMD Instinct MI300X (gfx942:sramecc+:xnack-)".into(),
        }],
        ..hrr::finding::ReplayInfo::default()
    })
    .unwrap();
    assert_valid(&v, &with_replay, "a replay record with loaded lines");
    let mut bad = f;
    bad["cause"]["kind"] = json!("cosmic_ray");
    assert!(!errors(&v, &bad).is_empty(), "an unknown cause kind");
    let mut bad_loaded = with_replay;
    bad_loaded["replay"]["loaded"] = json!(["Device"]);
    assert!(
        !errors(&v, &bad_loaded).is_empty(),
        "loaded lines as bare strings"
    );
}

/// The allocation map's fields are in the schemas: a finding carrying
/// `fault_allocation` and an archive summary carrying `memory` (with a
/// stale pointer example) validate, and the wrong relation is refused.
#[test]
fn fault_allocation_and_the_memory_section_are_in_the_schemas() {
    let sb = Sandbox::new();
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/crash.hrr/pid-4243");
    let log = sb.write(
        "replay.log",
        "Memory access fault by GPU node-2 (Agent handle: 0x55d5c2a1e6b0) on address 0x7f91da001000. Reason: Page not present or supervisor privilege.\n",
    );
    let f = output_of(
        &sb,
        &[
            "classify",
            "--log",
            log.to_str().unwrap(),
            "--archive",
            example,
            "--format",
            "json",
        ],
    );
    assert_eq!(f["fault_allocation"]["relation"], "past_end");
    let v = validator(&sb, "finding");
    assert_valid(&v, &f, "a finding with fault_allocation");
    let mut wrong = f.clone();
    wrong["fault_allocation"]["relation"] = "near".into();
    assert!(
        !errors(&v, &wrong).is_empty(),
        "an unknown relation is refused"
    );

    let info = output_of(&sb, &["archive", "info", "--json", example]);
    let mut with_example = info.clone();
    with_example["memory"]["examples"] = serde_json::json!([{
        "kind": "stale_pointer", "launch_seq": 3, "kernel": "k", "argument": 0,
        "address": "0x10", "range": {"api": "hipMalloc", "base": "0x0", "size": 256,
        "alloc_seq": 1, "freed_by": "hipFree", "free_seq": 2, "thread": 1}
    }]);
    let v = validator(&sb, "archive-info");
    assert_valid(&v, &info, "archive info with memory");
    assert_valid(
        &v,
        &with_example,
        "archive info with a stale pointer example",
    );
}
