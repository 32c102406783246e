//! `--shard K/N`: a deterministic partition of the expanded, byte-sorted
//! list of archives, so that the tasks of a job array (Slurm's
//! `SLURM_ARRAY_TASK_ID`, a Kubernetes Indexed Job's `JOB_COMPLETION_INDEX`)
//! split it without talking to each other. Task K takes every archive whose
//! index in the list, modulo N, is K.

use std::str::FromStr;

use anyhow::{anyhow, bail};

/// One part of N.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// K, from 0 to N-1.
    pub index: usize,
    /// N, at least 1.
    pub count: usize,
}

impl FromStr for Shard {
    type Err = anyhow::Error;

    /// `K/N` with whole numbers `0 <= K < N`.
    fn from_str(s: &str) -> anyhow::Result<Shard> {
        let usage =
            || anyhow!("--shard takes K/N with whole numbers 0 <= K < N (e.g. 0/4), not '{s}'");
        let (k, n) = s.split_once('/').ok_or_else(usage)?;
        let (Ok(index), Ok(count)) = (k.trim().parse::<usize>(), n.trim().parse::<usize>()) else {
            return Err(usage());
        };
        if count == 0 {
            bail!("--shard {s}: N must be at least 1 (K/N with 0 <= K < N)");
        }
        if index >= count {
            bail!(
                "--shard {s}: K must be below N; the {count} shards are 0/{count} to {}/{count}",
                count - 1
            );
        }
        Ok(Shard { index, count })
    }
}

impl Shard {
    /// The items of `sorted` this shard takes: those at an index `i` with
    /// `i % N == K`, in order.
    pub fn select<T>(self, sorted: Vec<T>) -> Vec<T> {
        sorted
            .into_iter()
            .enumerate()
            .filter(|(i, _)| i % self.count == self.index)
            .map(|(_, item)| item)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_is_in_exactly_one_shard() {
        for len in [0usize, 1, 5, 13] {
            let items: Vec<usize> = (0..len).collect();
            for n in 1..=8 {
                let mut seen = vec![0u32; len];
                for k in 0..n {
                    let shard: Shard = format!("{k}/{n}").parse().unwrap();
                    let part = shard.select(items.clone());
                    assert!(part.windows(2).all(|w| w[0] < w[1]), "order is kept");
                    for i in part {
                        seen[i] += 1;
                    }
                }
                assert!(seen.iter().all(|&c| c == 1), "len {len}, N {n}: {seen:?}");
            }
        }
    }

    #[test]
    fn the_same_list_gives_the_same_shard() {
        let shard: Shard = "1/3".parse().unwrap();
        assert_eq!(shard.select(vec!['a', 'b', 'c', 'd', 'e']), ['b', 'e']);
    }

    #[test]
    fn bad_shards_are_refused_with_what_to_give() {
        for bad in ["4/4", "0/0", "a/2", "1", "-1/3", "1/3/4", ""] {
            let err = bad.parse::<Shard>().unwrap_err().to_string();
            assert!(err.starts_with("--shard"), "{bad}: {err}");
            assert!(
                err.contains("K/N") || err.contains("K must be below N"),
                "{bad}: {err}"
            );
        }
        assert_eq!(
            "4/4".parse::<Shard>().unwrap_err().to_string(),
            "--shard 4/4: K must be below N; the 4 shards are 0/4 to 3/4"
        );
    }
}
