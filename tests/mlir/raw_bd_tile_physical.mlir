// The twin of raw_bd_tile.mlir in the physical form: the compute tile's two looping BDs as an
// aie.mem program, the shim's as dma_memcpy_nd in the same order (output first).
module {
  aie.device(npu1_1col) {
    %shim = aie.tile(0, 0)
    %t = aie.tile(0, 2)
    %buf = aie.buffer(%t) {address = 0 : i32, sym_name = "buf"} : memref<1024xi32>
    %prod = aie.lock(%t, 0) {init = 1 : i32, sym_name = "prod"}
    %cons = aie.lock(%t, 1) {init = 0 : i32, sym_name = "cons"}
    aie.flow(%shim, DMA : 0, %t, DMA : 0)
    aie.flow(%t, DMA : 0, %shim, DMA : 0)
    %mem = aie.mem(%t) {
      %s = aie.dma_start(S2MM, 0, ^recv, ^send_start)
    ^recv:
      aie.use_lock(%prod, AcquireGreaterEqual, 1)
      aie.dma_bd(%buf : memref<1024xi32> offset = 0 len = 1024)
      aie.use_lock(%cons, Release, 1)
      aie.next_bd ^recv
    ^send_start:
      %m = aie.dma_start(MM2S, 0, ^send, ^done)
    ^send:
      aie.use_lock(%cons, AcquireGreaterEqual, 1)
      aie.dma_bd(%buf : memref<1024xi32> offset = 0 len = 1024)
      aie.use_lock(%prod, Release, 1)
      aie.next_bd ^send
    ^done:
      aie.end
    }
    aie.shim_dma_allocation @in (%shim, MM2S, 0)
    aie.shim_dma_allocation @out (%shim, S2MM, 0)
    aie.runtime_sequence(%a: memref<1024xi32>, %b: memref<1024xi32>) {
      aiex.npu.dma_memcpy_nd(%b[0, 0, 0, 0][1, 1, 1, 1024][0, 0, 0, 1]) {id = 0 : i64, metadata = @out, issue_token = true} : memref<1024xi32>
      aiex.npu.dma_memcpy_nd(%a[0, 0, 0, 0][1, 1, 1, 1024][0, 0, 0, 1]) {id = 1 : i64, metadata = @in} : memref<1024xi32>
      aiex.npu.dma_wait {symbol = @out}
    }
  }
}
