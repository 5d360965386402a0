//! The test harness's own measurements: the peak RSS it reports for a
//! child is the child's, not a mark this test process left earlier. Its own
//! binary, so that the buffer it holds moves no other test's figures.

mod common;

use common::measure::run_measured;

#[test]
fn a_childs_peak_is_not_the_test_process_earlier_peak() {
    // 200 MB touched, then freed (a block that size is returned to the
    // system), as a test reading a big trace into memory leaves it.
    let mut big = vec![0u8; 200 << 20];
    for page in big.chunks_mut(4096) {
        page[0] = 1;
    }
    assert_eq!(big.iter().step_by(4096).map(|&b| b as usize).sum::<usize>(), (200 << 20) / 4096);
    drop(big);
    let o = run_measured(&["--version".as_ref()]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(o.max_rss_kb < 100 << 10, "peak RSS {} MB", o.max_rss_kb >> 10);
}
