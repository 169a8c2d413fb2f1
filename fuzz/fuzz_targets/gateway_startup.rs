#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| pistou_fuzz_targets::gateway_startup(data));
