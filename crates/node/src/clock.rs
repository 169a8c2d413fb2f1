use std::time::{SystemTime, UNIX_EPOCH};

/// Microseconds since the UNIX epoch from the system clock: the `now` fed to the state
/// machines. A clock before 1970 reads as 0 rather than panicking.
pub fn now_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}
