//! Markers that carry a constant in a type, so a generic kernel's launcher can name the
//! instance it launches: `tile::launch::<f32, 64>(..)` selects the instance whose key is
//! `(f32, ConstUsize<64>)`; an instance that was not built is a compile error.

macro_rules! const_markers {
    ($($name:ident: $ty:ty),* $(,)?) => {$(
        #[doc = concat!("A `const N: ", stringify!($ty), "` generic argument of a kernel, as a type.")]
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub struct $name<const N: $ty>;
    )*};
}

const_markers!(
    ConstUsize: usize,
    ConstIsize: isize,
    ConstU8: u8,
    ConstU16: u16,
    ConstU32: u32,
    ConstU64: u64,
    ConstI8: i8,
    ConstI16: i16,
    ConstI32: i32,
    ConstI64: i64,
);
