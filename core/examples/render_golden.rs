//! Writes the golden vectors to standard output:
//! `cargo run -p bloomlanes-core --example render_golden > core/golden/vectors.txt`.
fn main() {
    print!("{}", bloomlanes_core::golden::render());
}
