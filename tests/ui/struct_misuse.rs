// Tuples and structs used wrongly.
#[iris::kernels]
mod wrong {
    use iris::prelude::*;

    #[derive(Clone, Copy)]
    pub struct P {
        pub x: f32,
        pub n: u32,
    }

    pub fn missing(v: f32) -> P {
        P { x: v }
    }

    pub fn unknown_field(p: P) -> f32 {
        p.y
    }

    pub fn wrong_arity(v: u32) -> u32 {
        let (a, b, c) = (v, v);
        a + b + c
    }

    #[derive(Clone, Copy)]
    pub struct Padded {
        pub a: u8,
        pub b: u32,
    }

    #[kernel]
    pub fn padded_by_value(p: Padded, out: *mut u32) {
        unsafe { *out = p.b };
    }

    #[kernel]
    pub fn tuple_by_value(t: (u32, f32), out: *mut f32) {
        unsafe { *out = t.1 };
    }
}

#[iris::kernels]
mod not_copy {
    use iris::prelude::*;

    pub struct Q {
        pub x: f32,
    }

    #[kernel]
    pub fn k(out: *mut f32) {
        unsafe { *out = 1.0 };
    }
}

fn main() {}
