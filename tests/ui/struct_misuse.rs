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

    #[kernel]
    pub fn by_value(p: P, out: *mut f32) {
        unsafe { *out = p.x };
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
