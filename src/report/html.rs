//! The report as one self-contained HTML page, readable offline: inline
//! CSS, no script, nothing fetched. A bar chart of the outcomes (bar
//! lengths proportional to the counts) and the grouped table. Every string
//! goes through the template's HTML escaping, after the control and
//! bidirectional characters the markdown also drops; long kernel names
//! wrap inside their cell.

use maud::{html, Markup, PreEscaped, DOCTYPE};

use super::{totals, Group, Report};
use crate::finding::Label;
use crate::render::inert::sanitize;
use crate::render::{class_name, outcome_word, NA};

/// The page's style sheet.
const STYLE: &str = r#"
:root { color-scheme: light; --ink: #1d2330; --muted: #5b6475; --line: #d8dce4; --head: #f2f4f8; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: #fff; }
main { max-width: 1400px; margin: 0 auto; padding: 1.5rem; }
h1 { font-size: 1.5rem; margin: 0 0 .25rem; }
h2 { font-size: 1.15rem; margin: 1.75rem 0 .75rem; }
.totals { color: var(--muted); margin: 0; }
code { font: .85em/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; white-space: pre-wrap; overflow-wrap: anywhere; word-break: break-word; }
.chart { display: grid; grid-template-columns: 6rem minmax(0, 1fr) 4rem; gap: .4rem .75rem; align-items: center; max-width: 56rem; }
.bar-label { font-weight: 600; }
.bar-track { display: block; height: 1.3rem; background: var(--head); border-radius: 3px; overflow: hidden; }
.bar { display: block; height: 100%; background: #4a6fa5; }
.bar.PASS { background: #3c8d5a; }
.bar.MAF { background: #c0392b; }
.bar.FAIL { background: #d17a22; }
.bar.ABORT { background: #8e44ad; }
.bar.HANG { background: #b7950b; }
.bar.UNKNOWN { background: #7f8c8d; }
.bar-count { font-variant-numeric: tabular-nums; text-align: right; }
table { width: 100%; table-layout: fixed; border-collapse: collapse; }
th, td { border: 1px solid var(--line); padding: .4rem .5rem; text-align: left; vertical-align: top; overflow-wrap: anywhere; }
th { overflow-wrap: normal; }
th { background: var(--head); font-weight: 600; }
td.count { text-align: right; font-variant-numeric: tabular-nums; }
ul.examples { margin: 0; padding: 0; list-style: none; }
ul.examples li + li { margin-top: .2rem; }
.none, .also { color: var(--muted); }
@media (max-width: 900px) { body { font-size: 13px; } main { padding: 1rem; } }
.also { display: block; font-size: .85em; margin-top: .2rem; }
"#;

/// The columns of the grouped table, with their width: fixed for the short
/// ones, a share of the table for the names, the rest for the kernel.
const COLUMNS: [(&str, &str); 8] = [
    ("count", "3.5rem"),
    ("outcome", "6.5rem"),
    ("fault class", "10%"),
    ("kernel", "auto"),
    ("failing API", "8%"),
    ("labels", "10%"),
    ("examples", "15%"),
    ("captured", "8rem"),
];

/// The HTML page.
pub fn html(report: &Report) -> String {
    let most = report.outcomes.iter().map(|o| o.count).max().unwrap_or(1);
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { "HRR report" }
                style { (PreEscaped(STYLE)) }
            }
            body {
                main {
                    h1 { "HRR report" }
                    p.totals { (totals(report)) }
                    h2 { "Outcomes" }
                    div.chart {
                        @for o in &report.outcomes {
                            @let word = outcome_word(o.outcome);
                            span.bar-label { (word) }
                            span.bar-track {
                                span class={ "bar " (word) }
                                    style={ "width: " (share(o.count, most)) "%" }
                                    data-count=(o.count) {}
                            }
                            span.bar-count { (o.count) }
                        }
                    }
                    h2 { "Groups" }
                    table.groups {
                        colgroup {
                            @for (_, width) in COLUMNS {
                                col style={ "width: " (width) };
                            }
                        }
                        thead {
                            tr {
                                @for (name, _) in COLUMNS {
                                    th scope="col" { (name) }
                                }
                            }
                        }
                        tbody {
                            @for g in &report.groups {
                                (row(g))
                            }
                        }
                    }
                    @if !report.skipped.is_empty() {
                        h2 { "Skipped" }
                        ul.skipped {
                            @for s in &report.skipped {
                                li { code { (sanitize(&s.path)) } ": " (sanitize(&s.reason)) }
                            }
                        }
                    }
                }
            }
        }
    };
    page.into_string()
}

/// `count` as a percentage of `most`, the longest bar.
fn share(count: u64, most: u64) -> String {
    format!("{:.2}", count as f64 * 100.0 / most.max(1) as f64)
}

fn row(g: &Group) -> Markup {
    let s = &g.signature;
    html! {
        tr {
            td.count { (g.count) }
            td { (outcome_word(s.outcome)) }
            td { code { (class_name(s.fault_class)) } }
            td.kernel { (code_or_none(s.kernel_name.as_deref())) }
            td { (code_or_none(s.failing_api.as_deref())) }
            td {
                (labels(&s.labels))
                @let also = g.also_seen();
                @if !also.is_empty() {
                    span.also { "also seen: " (words(&also)) }
                }
            }
            td {
                @if g.examples.is_empty() {
                    span.none { (NA) }
                } @else {
                    ul.examples {
                        @for e in &g.examples {
                            li { code { (sanitize(e)) } }
                        }
                    }
                }
            }
            td {
                @match (&g.oldest, &g.newest) {
                    (Some(oldest), Some(newest)) if oldest == newest => { (time(oldest)) }
                    (Some(oldest), Some(newest)) => { (time(oldest)) " to " (time(newest)) }
                    _ => { span.none { (NA) } }
                }
            }
        }
    }
}

fn code_or_none(v: Option<&str>) -> Markup {
    match v {
        Some(v) => html! { code { (sanitize(v)) } },
        None => html! { span.none { (NA) } },
    }
}

/// An RFC 3339 time that may break after its date.
fn time(t: &str) -> Markup {
    let t = sanitize(t);
    match t.split_once('T') {
        Some((date, clock)) => html! { (date) "T" wbr; (clock) },
        None => html! { (t) },
    }
}

fn words(list: &[Label]) -> String {
    let words: Vec<&str> = list.iter().map(|l| l.as_str()).collect();
    words.join(" ")
}

fn labels(list: &[Label]) -> Markup {
    html! {
        @if list.is_empty() { span.none { "—" } } @else { (words(list)) }
    }
}
