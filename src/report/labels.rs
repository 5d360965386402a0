//! Short names for the files of a batch report: each file's base name, or
//! as many of its last path components as tell it apart from the other
//! files of the report (`node0/rank0.json` and `node1/rank0.json`).

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::error::shown;

/// The label of each file of a report.
#[derive(Default)]
pub struct FileLabels {
    labels: HashMap<PathBuf, String>,
}

impl FileLabels {
    /// Labels for `paths`: a path given more than once is one file.
    pub fn of<'a>(paths: impl IntoIterator<Item = &'a Path>) -> FileLabels {
        let mut distinct: Vec<&Path> = paths.into_iter().collect();
        distinct.sort();
        distinct.dedup();
        // Each file's components, last first.
        let parts: Vec<Vec<&OsStr>> = distinct.iter().map(|p| p.iter().rev().collect()).collect();
        let mut depth: Vec<usize> = parts.iter().map(|c| c.len().min(1)).collect();
        loop {
            let suffix = |i: usize| &parts[i][..depth[i]];
            let mut by_suffix: HashMap<&[&OsStr], Vec<usize>> = HashMap::new();
            for i in 0..distinct.len() {
                by_suffix.entry(suffix(i)).or_default().push(i);
            }
            let mut deeper = Vec::new();
            for group in by_suffix.values().filter(|g| g.len() > 1) {
                deeper.extend(group.iter().copied().filter(|&i| depth[i] < parts[i].len()));
            }
            if deeper.is_empty() {
                break;
            }
            for i in deeper {
                depth[i] += 1;
            }
        }
        let labels = distinct
            .iter()
            .zip(&parts)
            .zip(&depth)
            .map(|((path, parts), &depth)| {
                let label: PathBuf = parts[..depth].iter().rev().collect();
                let label = if depth == 0 { path.to_path_buf() } else { label };
                (path.to_path_buf(), shown(&label))
            })
            .collect();
        FileLabels { labels }
    }

    /// The label of `path`; its base name when it is not one of the files.
    pub fn get(&self, path: &Path) -> String {
        match self.labels.get(path) {
            Some(label) => label.clone(),
            None => shown(path.file_name().map_or(path, Path::new)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::FileLabels;
    use std::path::Path;

    fn labels(paths: &[&str]) -> Vec<String> {
        let l = FileLabels::of(paths.iter().map(Path::new));
        paths.iter().map(|p| l.get(Path::new(p))).collect()
    }

    #[test]
    fn distinct_base_names_are_kept_alone() {
        assert_eq!(labels(&["/job/a/rank0.json", "/job/b/rank1.json"]), ["rank0.json", "rank1.json"]);
    }

    #[test]
    fn files_of_one_base_name_show_the_folders_that_tell_them_apart() {
        assert_eq!(
            labels(&["/job/node0/rank0.json", "/job/node1/rank0.json", "/job/node1/rank1.json"]),
            ["node0/rank0.json", "node1/rank0.json", "rank1.json"]
        );
        assert_eq!(
            labels(&["/x/run/n0/rank0.json", "/y/run/n0/rank0.json"]),
            ["x/run/n0/rank0.json", "y/run/n0/rank0.json"]
        );
    }

    #[test]
    fn a_label_that_becomes_another_files_name_is_told_apart_too() {
        // `b/r.json` is one file's whole relative path and the other's
        // last two components.
        let got = labels(&["b/r.json", "a/b/r.json", "c/r.json"]);
        assert_eq!(got[2], "c/r.json");
        assert_ne!(got[0], got[1]);
    }

    #[test]
    fn a_path_named_twice_is_one_file_and_unknown_paths_give_their_base_name() {
        assert_eq!(labels(&["/j/rank0.json", "/j/rank0.json"]), ["rank0.json", "rank0.json"]);
        assert_eq!(FileLabels::default().get(Path::new("/j/x/rank3.json")), "rank3.json");
    }

    #[test]
    fn hidden_characters_are_escaped() {
        assert_eq!(labels(&["/a\u{1b}/r.json", "/b/r.json"])[0], "a\\u{1b}/r.json");
    }
}
