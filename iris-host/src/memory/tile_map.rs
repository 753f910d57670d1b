//! Tile maps: what a kernel's `copy_tile` reads to copy a box of a matrix into shared
//! memory (see the device prelude's `bulk` module).

use iris_driver::{Device, Error, Result, TileShape};

/// Words of a tile map: the copy engine's description (16 words, zero where the device
/// has no engine), then the matrix's address, rows, columns, element bytes, box rows and
/// box columns, then padding.
pub const TILE_MAP_WORDS: usize = 32;

/// Bytes of one box row: the 128-byte swizzle's row.
const BOX_ROW_BYTES: usize = 128;

/// The words of a tile map of the row-major `rows` x `cols` matrix of `elem_bytes`-byte
/// elements at `base` (which holds `len` elements), in boxes of `box_rows` rows of 128
/// bytes. Errors name what does not fit.
pub(crate) fn tile_map_words(
    device: &dyn Device,
    base: u64,
    len: usize,
    elem_bytes: usize,
    (rows, cols, box_rows): (usize, usize, usize),
) -> Result<[u64; TILE_MAP_WORDS]> {
    let bad = |why: String| Err(Error::InvalidConfig(format!("tile map: {why}")));
    if !matches!(elem_bytes, 1 | 2 | 4 | 8) {
        return bad(format!("elements of {elem_bytes} bytes (1, 2, 4 or 8)"));
    }
    if rows == 0 || cols == 0 || rows.checked_mul(cols).is_none_or(|n| n > len) {
        return bad(format!(
            "a {rows} x {cols} matrix in a buffer of {len} elements"
        ));
    }
    if (cols * elem_bytes) % 16 != 0 || base % 16 != 0 {
        return bad(format!(
            "rows of {} bytes at address {base:#x} (the copy engine needs 16-byte multiples)",
            cols * elem_bytes
        ));
    }
    if !(1..=256).contains(&box_rows) {
        return bad(format!("boxes of {box_rows} rows (1 to 256)"));
    }
    let box_cols = BOX_ROW_BYTES / elem_bytes;
    if cols < box_cols {
        return bad(format!(
            "rows of {cols} elements, fewer than a box row's {box_cols}"
        ));
    }
    let shape = TileShape {
        base,
        rows: rows as u64,
        cols: cols as u64,
        elem_bytes: elem_bytes as u32,
        box_rows: box_rows as u32,
        box_cols: box_cols as u32,
    };
    let mut words = [0u64; TILE_MAP_WORDS];
    if let Some(engine) = device.tile_map(&shape)? {
        words[..16].copy_from_slice(&engine);
    }
    words[16..22].copy_from_slice(&[
        base,
        shape.rows,
        shape.cols,
        u64::from(shape.elem_bytes),
        u64::from(shape.box_rows),
        u64::from(shape.box_cols),
    ]);
    Ok(words)
}
