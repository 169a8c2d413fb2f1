use std::fmt;

/// A mistake in the command line (exit code 2), as opposed to a failure while running
/// (exit code 1).
#[derive(Debug)]
pub struct Usage(pub String);

impl fmt::Display for Usage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// What the testing-only options answer in a binary built without them.
#[cfg(not(feature = "fault-injection"))]
pub fn without_fault_injection(option: &str) -> Usage {
    Usage(format!(
        "{option} is for testing only and this pistou binary was built without it (build with `--features fault-injection`)"
    ))
}
