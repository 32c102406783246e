//! The report as markdown: the totals, the outcome counts and one table row
//! per group, every archive-controlled string made inert by the rules of
//! the findings' markdown.

use std::fmt::Write as _;

use super::{totals, Group, Report};
use crate::finding::Label;
use crate::render::inert;
use crate::render::{class_name, code_or_na, outcome_word, text_or_na, NA};

/// The markdown report.
pub fn markdown(report: &Report) -> String {
    let mut out = format!("## HRR Report\n\n{}\n\n", inert::text(&totals(report)));
    let outcomes: Vec<String> = report
        .outcomes
        .iter()
        .map(|o| format!("{} {}", outcome_word(o.outcome), o.count))
        .collect();
    let _ = writeln!(out, "Outcomes: {}\n", outcomes.join(", "));
    out.push_str(
        "| count | outcome | fault class | kernel | failing API | labels | also seen | examples | oldest | newest |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    for g in &report.groups {
        row(&mut out, g);
    }
    out
}

fn row(out: &mut String, g: &Group) {
    let s = &g.signature;
    let examples: Vec<String> = g.examples.iter().map(|e| inert::code(e, true)).collect();
    let _ = writeln!(
        out,
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
        g.count,
        outcome_word(s.outcome),
        inert::code(&class_name(s.fault_class), true),
        code_or_na(s.kernel_name.as_deref(), true),
        code_or_na(s.failing_api.as_deref(), true),
        labels(&s.labels),
        labels(&g.also_seen()),
        if examples.is_empty() {
            NA.to_string()
        } else {
            examples.join(", ")
        },
        text_or_na(g.oldest.as_deref()),
        text_or_na(g.newest.as_deref()),
    );
}

fn labels(list: &[Label]) -> String {
    if list.is_empty() {
        return "—".into();
    }
    let words: Vec<&str> = list.iter().map(|l| l.as_str()).collect();
    inert::text(&words.join(" "))
}
