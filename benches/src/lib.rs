//! Criterion benchmarks of bloomlanes live in `benches/`; this library is empty.
