//! TPC-C's random data (spec 4.3.2): a-strings, n-strings, zip codes, customer last names,
//! the non-uniform NURand distribution (2.1.6) and the "ORIGINAL" marker of item and stock data.

use rand::Rng;

const ALPHANUMERIC: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const SYLLABLES: [&str; 10] = ["BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"];

/// The run-time constants C of NURand (2.1.6); the load uses its own C for last names, and
/// the run's differs from it as 2.1.6.1 requires.
#[derive(Clone, Copy, Debug)]
pub struct NuRandC {
    pub last: u64,
    pub customer: u64,
    pub item: u64,
}

impl NuRandC {
    pub fn load(rng: &mut impl Rng) -> NuRandC {
        NuRandC { last: rng.gen_range(0..256), customer: rng.gen_range(0..1024), item: rng.gen_range(0..8192) }
    }

    /// Run-time constants: C_LAST differs from the load's by 65..119 excluding 96 and 112 (2.1.6.1).
    pub fn run(load: &NuRandC, rng: &mut impl Rng) -> NuRandC {
        let delta = loop {
            let d = rng.gen_range(65..=119);
            if d != 96 && d != 112 {
                break d;
            }
        };
        NuRandC { last: (load.last + delta) % 256, customer: rng.gen_range(0..1024), item: rng.gen_range(0..8192) }
    }
}

/// NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x.
pub fn nurand(rng: &mut impl Rng, a: u64, c: u64, x: u64, y: u64) -> u64 {
    (((rng.gen_range(0..=a) | rng.gen_range(x..=y)) + c) % (y - x + 1)) + x
}

/// A random string of `min..=max` alphanumeric characters.
pub fn astring(rng: &mut impl Rng, min: usize, max: usize) -> String {
    let len = rng.gen_range(min..=max);
    (0..len).map(|_| ALPHANUMERIC[rng.gen_range(0..ALPHANUMERIC.len())] as char).collect()
}

/// A random string of `len` digits.
pub fn nstring(rng: &mut impl Rng, len: usize) -> String {
    (0..len).map(|_| char::from(b'0' + rng.gen_range(0..10u8))).collect()
}

/// Four random digits then "11111" (4.3.2.7).
pub fn zip(rng: &mut impl Rng) -> String {
    nstring(rng, 4) + "11111"
}

/// The last name made of the syllables of the digits of `number` (0..=999), 4.3.2.3.
pub fn last_name(number: u64) -> String {
    let n = number as usize % 1000;
    [n / 100, n / 10 % 10, n % 10].iter().map(|&d| SYLLABLES[d]).collect()
}

/// Item or stock data: 26..50 characters, 10% with "ORIGINAL" somewhere (4.3.3.1).
pub fn data_with_original(rng: &mut impl Rng) -> String {
    let mut data = astring(rng, 26, 50);
    if rng.gen_range(0..10) == 0 {
        let at = rng.gen_range(0..=data.len() - 8);
        data.replace_range(at..at + 8, "ORIGINAL");
    }
    data
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn last_names_are_made_of_syllables() {
        assert_eq!(last_name(0), "BARBARBAR");
        assert_eq!(last_name(371), "PRICALLYOUGHT");
        assert_eq!(last_name(999), "EINGEINGEING");
    }

    #[test]
    fn nurand_stays_in_range_and_run_constants_follow_the_rule() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        for _ in 0..10_000 {
            let v = nurand(&mut rng, 1023, 77, 1, 3000);
            assert!((1..=3000).contains(&v));
        }
        let load = NuRandC::load(&mut rng);
        for _ in 0..100 {
            let run = NuRandC::run(&load, &mut rng);
            let delta = (run.last + 256 - load.last) % 256;
            assert!((65..=119).contains(&delta) && delta != 96 && delta != 112, "{delta}");
        }
    }

    #[test]
    fn original_is_inside_the_data() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(2);
        let with: Vec<String> =
            (0..1000).map(|_| data_with_original(&mut rng)).filter(|d| d.contains("ORIGINAL")).collect();
        assert!(!with.is_empty());
        assert!(with.iter().all(|d| (26..=50).contains(&d.len())));
    }
}
