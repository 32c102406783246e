//! What a tool answers: the output schema it declares, built from the same
//! Rust types as `hrr schema`, and the result of one run of `hrr`: its JSON
//! as structured content, or a tool error carrying the `error:` text the
//! command printed.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use schemars::{JsonSchema, Schema};
use serde_json::{json, Value};

use super::subprocess::{Finished, Stopped, MAX_STDOUT};
use hrr::archive::event_stream::DecodedEvent;
use hrr::finding::Finding;
use hrr::schema;
use hrr::schema::Document;

/// How a tool's stdout becomes its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One JSON object (`archive info`, `preflight`, `classify`).
    Object,
    /// A finding, or with `triage --all` an array of them, which becomes
    /// `{"findings": [...]}`.
    Findings,
    /// JSON Lines of events, which become `{"events": [...]}`.
    Events,
}

/// The output schema of a tool that answers `document` as `hrr` prints it.
pub fn document_schema(document: Document) -> Arc<JsonObject> {
    object(schema::schema(document))
}

/// The output schema of `triage`: exactly one of a finding, or
/// `{"findings": [...]}` for `all`.
pub fn findings_schema() -> Arc<JsonObject> {
    let (finding, defs) = part_of::<Finding>();
    object(Schema::from(root(
        "hrr triage",
        "One finding, or with `all` {\"findings\": [...]}, one finding per process.",
        json!({
            "oneOf": [
                finding,
                list_of("findings", finding.clone(), "The finding of each process."),
            ],
        }),
        defs,
    )))
}

/// The output schema of `archive_events`: `{"events": [...]}`, each event
/// one line of `hrr archive events --json`.
pub fn events_schema() -> Arc<JsonObject> {
    let (event, defs) = part_of::<DecodedEvent>();
    object(Schema::from(root(
        "hrr archive events",
        "Decoded events, at most `limit` of them.",
        list_of("events", event, "The events, in file order."),
        defs,
    )))
}

/// A reference to `T`'s schema and the definitions it needs.
fn part_of<T: JsonSchema>() -> (Value, Value) {
    let mut generator = schema::generator();
    let reference = generator.subschema_for::<T>().to_value();
    let defs = Value::Object(generator.take_definitions(true));
    (reference, defs)
}

fn list_of(key: &str, items: Value, description: &str) -> Value {
    json!({
        "type": "object",
        "required": [key],
        "properties": {key: {"type": "array", "items": items, "description": description}},
    })
}

fn root(
    title: &str,
    description: &str,
    body: Value,
    defs: Value,
) -> serde_json::Map<String, Value> {
    let mut out = serde_json::Map::new();
    out.insert(
        "$schema".into(),
        "https://json-schema.org/draft/2020-12/schema".into(),
    );
    out.insert("title".into(), title.into());
    out.insert("description".into(), description.into());
    out.insert("type".into(), "object".into());
    if let Value::Object(body) = body {
        out.extend(body);
    }
    out.insert("$defs".into(), defs);
    out
}

fn object(schema: Schema) -> Arc<JsonObject> {
    match schema.to_value() {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

/// The result of a tool whose run of `hrr` ended as `run`.
///
/// JSON on stdout is the result, whatever the exit code (a blocked
/// preflight exits 1 with its report); the `error:` lines then follow it as
/// text. No JSON is a tool error with the `error:` text, or, when there is
/// none, the last stderr lines and the exit status.
pub fn result(run: Result<Finished, Stopped>, shape: Shape) -> CallToolResult {
    let run = match run {
        Ok(run) => run,
        Err(stopped) => return failure(stopped.to_string()),
    };
    let Some(stdout) = &run.stdout else {
        return failure(format!(
            "error: hrr printed more than {} MiB; ask for less (e.g. a smaller limit)",
            MAX_STDOUT >> 20
        ));
    };
    match parse(stdout, shape) {
        Some(value) => {
            let mut answer = CallToolResult::structured(value);
            if !run.errors.is_empty() {
                answer
                    .content
                    .push(ContentBlock::text(run.errors.join("\n")));
            }
            answer
        }
        None => failure(failure_text(&run)),
    }
}

fn parse(stdout: &[u8], shape: Shape) -> Option<Value> {
    let value = match shape {
        Shape::Events => {
            let events = stdout
                .split(|&b| b == b'\n')
                .filter(|line| !line.is_empty())
                .map(serde_json::from_slice)
                .collect::<Result<Vec<Value>, _>>()
                .ok()?;
            if events.is_empty() && !stdout.is_empty() {
                return None;
            }
            json!({ "events": events })
        }
        Shape::Findings => match serde_json::from_slice(stdout).ok()? {
            Value::Array(findings) => json!({ "findings": findings }),
            other => other,
        },
        Shape::Object => serde_json::from_slice(stdout).ok()?,
    };
    value.is_object().then_some(value)
}

fn failure_text(run: &Finished) -> String {
    if !run.errors.is_empty() {
        return run.errors.join("\n");
    }
    let status = match run.code {
        Some(0) => "error: hrr printed no JSON".to_string(),
        Some(code) => format!("error: hrr exited with status {code} and printed no JSON"),
        None => "error: hrr was killed by a signal".to_string(),
    };
    if run.tail.is_empty() {
        status
    } else {
        format!("{status}; its last lines:\n{}", run.tail.join("\n"))
    }
}

fn failure(text: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finished(code: i32, stdout: &str, errors: &[&str]) -> Finished {
        Finished {
            code: Some(code),
            stdout: Some(stdout.as_bytes().to_vec()),
            errors: errors.iter().map(|s| s.to_string()).collect(),
            tail: vec!["[hrr] reading".into()],
        }
    }

    #[test]
    fn an_empty_event_stream_is_an_empty_list() {
        let r = result(Ok(finished(0, "", &[])), Shape::Events);
        assert_eq!(r.is_error, Some(false));
        assert_eq!(r.structured_content, Some(json!({"events": []})));
    }

    #[test]
    fn a_failure_without_json_carries_the_error_line() {
        let r = result(
            Ok(finished(1, "", &["error: /x holds no process archive"])),
            Shape::Object,
        );
        assert_eq!(r.is_error, Some(true));
        let text = r.content[0].as_text().unwrap().text.clone();
        assert_eq!(text, "error: /x holds no process archive");
    }

    #[test]
    fn a_report_printed_before_a_failing_exit_is_the_result() {
        let r = result(
            Ok(finished(
                1,
                "{\"status\":\"blocked\"}\n",
                &["error: replay preflight blocked: no GPU"],
            )),
            Shape::Object,
        );
        assert_eq!(r.is_error, Some(false));
        assert_eq!(r.structured_content, Some(json!({"status": "blocked"})));
        assert!(r.content[1].as_text().unwrap().text.contains("blocked"));
    }

    #[test]
    fn output_that_is_not_an_object_is_an_error_naming_the_status() {
        let r = result(Ok(finished(3, "[1]", &[])), Shape::Object);
        assert_eq!(r.is_error, Some(true));
        let text = r.content[0].as_text().unwrap().text.clone();
        assert!(text.contains("status 3") && text.contains("[hrr] reading"));
    }

    #[test]
    fn every_output_schema_declares_an_object_with_its_definitions() {
        for s in [
            findings_schema(),
            events_schema(),
            document_schema(Document::ArchiveInfo),
        ] {
            assert_eq!(s["type"], "object");
            assert!(s["$defs"].is_object());
        }
    }
}
