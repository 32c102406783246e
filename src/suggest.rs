//! "Did you mean …?" suggestions by edit distance.

/// The candidate closest to `word` by Levenshtein distance, if it is close
/// enough to be a plausible typo (at most a third of the word's length, and
/// at least 1 edit allowed).
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (word.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .map(|c| (distance(word, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, c)| (*d, *c))
        .map(|(_, c)| c)
}

/// Levenshtein edit distance between two strings, by characters.
pub fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if ca == *cb {
                diag
            } else {
                1 + diag.min(above).min(row[j])
            };
            diag = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_near_misses_only() {
        assert_eq!(distance("triage", "traige"), 2);
        assert_eq!(closest("traige", ["triage", "replay"]), Some("triage"));
        assert_eq!(closest("zzz", ["triage", "replay"]), None);
    }
}
