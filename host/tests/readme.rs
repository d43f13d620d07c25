//! The README's library example (`examples/library.rs`): run here, and checked to be what the
//! README shows, verbatim. CI also runs this test with `--no-default-features`, the
//! configuration the README advertises.

mod example {
    include!("../examples/library.rs");

    pub fn run() {
        main().expect("the README's library example runs");
    }
}

#[test]
fn readme_library_example_runs() {
    example::run();
}

#[test]
fn readme_shows_the_example_verbatim() {
    let readme = include_str!("../../README.md");
    let example = include_str!("../examples/library.rs");
    assert!(
        readme.contains(&format!("```rust\n{example}```")),
        "README.md must show host/examples/library.rs verbatim in a ```rust block"
    );
    assert!(
        example.lines().count() < 15,
        "the example stays under fifteen lines"
    );
    assert!(readme.contains("bloomlanes-host = { version = \"0.1\", default-features = false }"));
}
