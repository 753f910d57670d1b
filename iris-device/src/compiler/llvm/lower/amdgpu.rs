//! AMD specifics: work-item and work-group ids, block and grid sizes from the implicit
//! kernel arguments (code object v5), and the block barrier.

use super::super::super::kernel_ir::Dim;
use super::builder::FnBuilder;
use super::ids::Coord;
use super::module::INVARIANT;

/// Offset of `hidden_block_count_x` in the implicit arguments (three `u32`).
const BLOCK_COUNT_OFFSET: u32 = 0;
/// Offset of `hidden_group_size_x` in the implicit arguments (three `u16`).
const GROUP_SIZE_OFFSET: u32 = 12;

impl FnBuilder<'_> {
    /// A thread or block coordinate.
    pub fn amdgpu_coord(&mut self, coord: Coord, dim: Dim) -> String {
        let d = ["x", "y", "z"][dim.index()];
        match coord {
            Coord::ThreadIdx | Coord::BlockIdx => {
                let kind = if matches!(coord, Coord::ThreadIdx) {
                    "workitem"
                } else {
                    "workgroup"
                };
                let name = format!("llvm.amdgcn.{kind}.id.{d}");
                self.m.declare(&name, "i32", "");
                self.def(&format!("call i32 @{name}()"))
            }
            Coord::BlockDim => {
                let v = self.implicit_arg("i16", GROUP_SIZE_OFFSET + 2 * dim.index() as u32, 2);
                self.def(&format!("zext i16 {v} to i32"))
            }
            Coord::GridDim => {
                self.implicit_arg("i32", BLOCK_COUNT_OFFSET + 4 * dim.index() as u32, 4)
            }
        }
    }

    fn implicit_arg(&mut self, ty: &str, offset: u32, align: u32) -> String {
        let name = "llvm.amdgcn.implicitarg.ptr";
        self.m.declare(name, "ptr addrspace(4)", "");
        let base = self.def(&format!("call ptr addrspace(4) @{name}()"));
        let p = self.def(&format!(
            "getelementptr inbounds i8, ptr addrspace(4) {base}, i64 {offset}"
        ));
        self.def(&format!(
            "load {ty}, ptr addrspace(4) {p}, align {align}, !invariant.load {INVARIANT}"
        ))
    }

    /// `s_barrier` between a workgroup release and acquire fence.
    pub fn amdgpu_barrier(&mut self) {
        let name = "llvm.amdgcn.s.barrier";
        self.m.declare(name, "void", "");
        self.inst("fence syncscope(\"workgroup\") release");
        self.inst(&format!("call void @{name}()"));
        self.inst("fence syncscope(\"workgroup\") acquire");
    }
}
