use bloomlanes_host::{query, save_filter, BackendChoice, FilterBuilder, FilterFile, KeySet};

fn main() -> Result<(), bloomlanes_host::Error> {
    let path = std::env::temp_dir().join("users.blf");
    let users = KeySet::from_strings(["alice", "bob", "carol"]);
    let built = FilterBuilder::new().fpp(0.001).build(&users)?; // SIMD on every core
    save_filter(&path, &built.filter)?; // atomic: a temporary file renamed into place
    let file = FilterFile::open(&path)?; // checked, memory-mapped
    assert!(file.contains("alice")); // one key: &str, &[u8], u64, i32 ... (core's Key trait)
    let batch = KeySet::from_strings(["bob", "mallory"]);
    let answers = query(&file, &batch, BackendChoice::Auto)?.answers; // one bit per key
    assert!(answers.get(0) && !answers.get(1)); // bob may be present, mallory is not
    Ok(())
}
