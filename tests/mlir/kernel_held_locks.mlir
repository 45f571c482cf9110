// physical_passthrough.mlir with a C kernel that takes its locks as arguments and acquires and
// releases them itself (aie_kernel_utils.h's _lock_acquire/_lock_release): the kernel acquires
// operands 2 (in_full) and 3 (out_free) before its work and releases operands 4 (in_free) and 5
// (out_full) after it, which MLIR cannot say: the kernel costs declare it
// ([kernels.kernel] cycles = N, acquire = [[2, 1], [3, 1]], release = [[4, 1], [5, 1]]).
module {
  aie.device(npu2) {
    %shim = aie.tile(0, 0)
    %core_tile = aie.tile(0, 2)

    %in_a = aie.buffer(%core_tile) {sym_name = "in_a"} : memref<256xi32>
    %in_b = aie.buffer(%core_tile) {sym_name = "in_b"} : memref<256xi32>
    %out_a = aie.buffer(%core_tile) {sym_name = "out_a"} : memref<256xi32>
    %out_b = aie.buffer(%core_tile) {sym_name = "out_b"} : memref<256xi32>
    %in_free = aie.lock(%core_tile, 0) {init = 2 : i32, sym_name = "in_free"}
    %in_full = aie.lock(%core_tile, 1) {init = 0 : i32, sym_name = "in_full"}
    %out_free = aie.lock(%core_tile, 2) {init = 2 : i32, sym_name = "out_free"}
    %out_full = aie.lock(%core_tile, 3) {init = 0 : i32, sym_name = "out_full"}

    aie.flow(%shim, DMA : 0, %core_tile, DMA : 0)
    aie.flow(%core_tile, DMA : 0, %shim, DMA : 0)

    func.func private @kernel(memref<256xi32>, memref<256xi32>, index, index, index, index)

    %core = aie.core(%core_tile) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      scf.for %i = %c0 to %c4 step %c1 {
        func.call @kernel(%in_a, %out_a, %in_full, %out_free, %in_free, %out_full) : (memref<256xi32>, memref<256xi32>, index, index, index, index) -> ()
      }
      aie.end
    }

    %mem = aie.mem(%core_tile) {
      %s = aie.dma_start(S2MM, 0, ^recv_a, ^send)
    ^recv_a:
      aie.use_lock(%in_free, AcquireGreaterEqual, 1)
      aie.dma_bd(%in_a : memref<256xi32> offset = 0 len = 256)
      aie.use_lock(%in_full, Release, 1)
      aie.next_bd ^recv_b
    ^recv_b:
      aie.use_lock(%in_free, AcquireGreaterEqual, 1)
      aie.dma_bd(%in_b : memref<256xi32> offset = 0 len = 256)
      aie.use_lock(%in_full, Release, 1)
      aie.next_bd ^recv_a
    ^send:
      %m = aie.dma_start(MM2S, 0, ^send_a, ^done)
    ^send_a:
      aie.use_lock(%out_full, AcquireGreaterEqual, 1)
      aie.dma_bd(%out_a : memref<256xi32>)
      aie.use_lock(%out_free, Release, 1)
      aie.next_bd ^send_b
    ^send_b:
      aie.use_lock(%out_full, AcquireGreaterEqual, 1)
      aie.dma_bd(%out_b : memref<256xi32>)
      aie.use_lock(%out_free, Release, 1)
      aie.next_bd ^send_a
    ^done:
      aie.end
    }

    aie.shim_dma_allocation @to_core (%shim, MM2S, 0)
    aie.shim_dma_allocation @from_core (%shim, S2MM, 0)

    aie.runtime_sequence(%src: memref<1024xi32>, %dst: memref<1024xi32>) {
      aiex.npu.dma_memcpy_nd(%src[0, 0, 0, 0][4, 1, 1, 256][0, 0, 0, 1]) {id = 0 : i64, metadata = @to_core} : memref<1024xi32>
      aiex.npu.dma_memcpy_nd(%dst[0, 0, 0, 0][4, 1, 1, 256][0, 0, 0, 1]) {id = 1 : i64, metadata = @from_core, issue_token = true} : memref<1024xi32>
      aiex.npu.dma_wait {symbol = @from_core}
    }
  }
}
