//! The fallible constructors (`try_new`) make the filters `new` makes; only a refused
//! allocation differs (None instead of an abort; exercised in the Python package's tests under
//! an address-space limit, where it is deterministic).

use bloomlanes_core::{CounterBits, CountingFilter, Filter, FilterKind, Layout, Params};
use bloomlanes_core::{WindowFilter, WindowUnit};

#[test]
fn try_new_makes_what_new_makes() {
    let p = Params::new(Layout::L16x32, 33).with_seed(9);
    assert_eq!(Filter::try_new(p), Some(Filter::new(p)));
    let c = p.with_kind(FilterKind::Counting {
        counter_bits: CounterBits::Eight,
    });
    assert_eq!(CountingFilter::try_new(c), CountingFilter::new(c));
    assert!(CountingFilter::try_new(p).is_none(), "not a counting kind");
    let w = p.with_kind(FilterKind::Window {
        generations: 2,
        unit: WindowUnit::Keys,
        span: 10,
    });
    assert_eq!(WindowFilter::try_new(w), WindowFilter::new(w));
    assert!(WindowFilter::try_new(p).is_none(), "not a window kind");
}
