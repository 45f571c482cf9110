// scf.if whose condition is known before the run: a comparison of constants, and of the index of
// a loop that runs once (how mlir-aie's cascade matmul tests hand partial sums on only at k = 0).
// The then-branch acquires, computes and releases; the else-branch would acquire a lock nobody
// releases (a deadlock if it were ever read).
module {
  aie.device(npu2) {
    %tile_0_2 = aie.tile(0, 2)
    %buf = aie.buffer(%tile_0_2) {sym_name = "buf"} : memref<64xi32>
    %lock_free = aie.lock(%tile_0_2, 0) {init = 1 : i32, sym_name = "free"}
    %lock_never = aie.lock(%tile_0_2, 1) {init = 0 : i32, sym_name = "never"}

    aie.core(%tile_0_2) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      scf.for %k = %c0 to %c1 step %c1 {
        %first = arith.cmpi eq, %k, %c0 : index
        scf.if %first {
          aie.use_lock(%lock_free, AcquireGreaterEqual, 1)
          %v = memref.load %buf[%c0] : memref<64xi32>
          memref.store %v, %buf[%c1] : memref<64xi32>
          aie.use_lock(%lock_free, Release, 1)
        } else {
          aie.use_lock(%lock_never, AcquireGreaterEqual, 1)
        }
      }
      %small = arith.cmpi "sgt", %c1, %c3 : index
      scf.if %small {
        aie.use_lock(%lock_never, AcquireGreaterEqual, 1)
      }
      aie.end
    }
  }
}
