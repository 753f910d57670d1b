//! Mistakes users make in kernels, each a compile error at the offending tokens with a
//! message that says what is supported instead (expected output in tests/ui/*.stderr).

#[test]
fn kernel_subset_errors() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
