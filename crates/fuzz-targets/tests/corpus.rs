//! Replays every checked-in fuzz input (`fuzz/corpus/<target>/` and the crashes fixed since,
//! `fuzz/regressions/<target>/`) through the target functions on stable.

use std::path::PathBuf;

fn inputs(kind: &str, target: &str) -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz").join(kind).join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries.filter_map(|e| Some(e.ok()?.path())).filter(|p| p.is_file()).collect();
    files.sort();
    files
}

#[test]
fn every_corpus_input_and_past_crash_passes_its_target() {
    for (target, run) in pistou_fuzz_targets::TARGETS {
        let corpus = inputs("corpus", target);
        assert!(!corpus.is_empty(), "fuzz/corpus/{target} is empty: run the fuzzer and check its corpus in");
        for path in corpus.iter().chain(&inputs("regressions", target)) {
            let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            run(&data);
        }
        eprintln!("{target}: {} inputs", corpus.len());
    }
}
