//! The extension's own kernel: translate, then store. Each thread reads elements of a
//! plain device array (a PyTorch tensor's memory, or a symmetric buffer's local copy) and
//! stores them into `peer`'s copy of a symmetric allocation, translating every address
//! through that allocation's own table.

/// One kernel per element type (kernels have no generics): `put_<T>(src, dst, n, offset,
/// peer)` stores `src[0..n]` into `peer`'s `dst[offset..offset + n]`.
macro_rules! put_kernels {
    ($($name:ident: $t:ident;)*) => {
        /// `put_<T>`: `src[i]` into `peer`'s `dst[offset + i]`, grid-stride over `n`.
        #[iris::kernels]
        pub mod put {
            #[allow(unused_imports)]
            use iris::prelude::*;

            $(
                #[kernel]
                pub fn $name(src: *const $t, dst: Symmetric<$t>, n: u64, offset: u64, peer: u32) {
                    let stride = (grid_dim_x() * block_dim_x()) as u64;
                    let mut i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
                    while i < n {
                        let v = unsafe { *src.add(i as usize) };
                        store(dst.add((offset + i) as usize), v, peer);
                        i += stride;
                    }
                }
            )*
        }
    };
}

put_kernels! {
    put_f32: f32;
    put_f64: f64;
    put_f16: f16;
    put_bf16: bf16;
    put_i32: i32;
    put_u32: u32;
    put_i64: i64;
    put_u64: u64;
}
