//! Layouts as types: one zero-sized marker per [`Layout`], so that every generic loop of the
//! crate is compiled once per layout with the layout's numbers (lanes, word width, lane shift,
//! block size) as compile-time constants, and the `match`es on them fold away.
//!
//! [`with_shape!`] turns the run-time layout of a filter into its marker, once per bulk call.

use bloomlanes_core::Layout;

/// A layout known at compile time.
pub(crate) trait Shape {
    /// The layout this type stands for.
    const LAYOUT: Layout;
}

/// [`Layout::L8x32`] as a type.
pub(crate) struct L8x32;
/// [`Layout::L8x64`] as a type.
pub(crate) struct L8x64;
/// [`Layout::L16x32`] as a type.
pub(crate) struct L16x32;
/// [`Layout::L16x64`] as a type.
pub(crate) struct L16x64;

impl Shape for L8x32 {
    const LAYOUT: Layout = Layout::L8x32;
}
impl Shape for L8x64 {
    const LAYOUT: Layout = Layout::L8x64;
}
impl Shape for L16x32 {
    const LAYOUT: Layout = Layout::L16x32;
}
impl Shape for L16x64 {
    const LAYOUT: Layout = Layout::L16x64;
}

/// Evaluates `$body` with `$S` naming the [`Shape`] marker of the layout `$layout`:
/// `with_shape!(params.layout, S => run::<S>())`.
macro_rules! with_shape {
    ($layout:expr, $S:ident => $body:expr) => {
        with_shape!(@ $layout, $S, $body; L8x32 L8x64 L16x32 L16x64)
    };
    (@ $layout:expr, $S:ident, $body:expr; $($shape:ident)*) => {
        match $layout {
            $(bloomlanes_core::Layout::$shape => {
                type $S = $crate::shape::$shape;
                $body
            })*
        }
    };
}
pub(crate) use with_shape;

#[cfg(test)]
mod tests {
    use super::*;

    fn layout_of<S: Shape>() -> Layout {
        S::LAYOUT
    }

    #[test]
    fn with_shape_picks_the_marker_of_each_layout() {
        for layout in Layout::ALL {
            assert_eq!(with_shape!(layout, S => layout_of::<S>()), layout);
        }
    }
}
