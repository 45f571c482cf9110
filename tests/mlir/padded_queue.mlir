// shim -> mem tile -> compute -> shim, in the physical form, with what runs on the part but moves
// no extra modelled state: a mem-tile S2MM with two chains queued on one channel (dma_start
// repeat_count), a mem-tile MM2S that zero-pads 13 words to 16 (2 before, 1 after), a core that
// loops forever by cf.br, a runtime argument typed smaller than the host buffer it reads, a
// task-completion token flow, a configuration load of the device itself and a processor-bus
// register write. Four objects: 4 x 52 bytes in, 4 x 64 bytes (padded) through and out.
module {
  aie.device(npu2) @dev {
    %shim = aie.tile(0, 0)
    %mem = aie.tile(0, 1)
    %ct = aie.tile(0, 2)

    %stage = aie.buffer(%mem) {sym_name = "stage"} : memref<16xi32>
    %stage_free = aie.lock(%mem, 0) {init = 1 : i32, sym_name = "stage_free"}
    %stage_full = aie.lock(%mem, 1) {init = 0 : i32, sym_name = "stage_full"}
    %in = aie.buffer(%ct) {sym_name = "in"} : memref<16xi32>
    %out = aie.buffer(%ct) {sym_name = "out"} : memref<16xi32>
    %in_free = aie.lock(%ct, 0) {init = 1 : i32, sym_name = "in_free"}
    %in_full = aie.lock(%ct, 1) {init = 0 : i32, sym_name = "in_full"}
    %out_free = aie.lock(%ct, 2) {init = 1 : i32, sym_name = "out_free"}
    %out_full = aie.lock(%ct, 3) {init = 0 : i32, sym_name = "out_full"}

    aie.flow(%shim, DMA : 0, %mem, DMA : 0)
    aie.flow(%mem, DMA : 0, %ct, DMA : 0)
    aie.flow(%ct, DMA : 0, %shim, DMA : 0)
    aie.packet_flow(0x1) {
      aie.packet_source<%shim, TileControl : 0>
      aie.packet_dest<%shim, South : 0>
    }

    func.func private @scale(memref<16xi32>, memref<16xi32>)

    %core = aie.core(%ct) {
      cf.br ^loop
    ^loop:
      aie.use_lock(%in_full, AcquireGreaterEqual, 1)
      aie.use_lock(%out_free, AcquireGreaterEqual, 1)
      func.call @scale(%in, %out) : (memref<16xi32>, memref<16xi32>) -> ()
      aie.use_lock(%in_free, Release, 1)
      aie.use_lock(%out_full, Release, 1)
      cf.br ^loop
    }

    %mem_dma = aie.memtile_dma(%mem) {
      %0 = aie.dma_start(S2MM, 0, ^recv, ^second, repeat_count = 1)
    ^recv:
      aie.use_lock(%stage_free, AcquireGreaterEqual, 1)
      aie.dma_bd(%stage : memref<16xi32> offset = 0 len = 13)
      aie.use_lock(%stage_full, Release, 1)
      aie.next_bd ^end
    ^second:
      %1 = aie.dma_start(S2MM, 0, ^recv, ^send, repeat_count = 1)
    ^send:
      %2 = aie.dma_start(MM2S, 0, ^pad, ^end)
    ^pad:
      aie.use_lock(%stage_full, AcquireGreaterEqual, 1)
      aie.dma_bd(%stage : memref<16xi32> offset = 0 len = 13 sizes = [13] strides = [1] pad [<const_pad_before = 2, const_pad_after = 1>])
      aie.use_lock(%stage_free, Release, 1)
      aie.next_bd ^pad
    ^end:
      aie.end
    }

    %ct_dma = aie.mem(%ct) {
      %0 = aie.dma_start(S2MM, 0, ^fill, ^drain_start)
    ^fill:
      aie.use_lock(%in_free, AcquireGreaterEqual, 1)
      aie.dma_bd(%in : memref<16xi32> offset = 0 len = 16)
      aie.use_lock(%in_full, Release, 1)
      aie.next_bd ^fill
    ^drain_start:
      %1 = aie.dma_start(MM2S, 0, ^drain, ^end)
    ^drain:
      aie.use_lock(%out_full, AcquireGreaterEqual, 1)
      aie.dma_bd(%out : memref<16xi32> offset = 0 len = 16)
      aie.use_lock(%out_free, Release, 1)
      aie.next_bd ^drain
    ^end:
      aie.end
    }

    aie.shim_dma_allocation @to_mem (%shim, MM2S, 0)
    aie.shim_dma_allocation @from_core (%shim, S2MM, 0)

    aie.runtime_sequence @seq(%src : memref<13xi32>, %dst : memref<64xi32>) {
      %bus = arith.constant 0x32038 : i32
      %one = arith.constant 1 : i32
      aiex.npu.load_pdi {device_ref = @dev}
      aiex.npu.maskwrite32(%bus, %one, %one) {column = 0 : i32, row = 2 : i32} : i32, i32, i32
      aiex.configure @dev {
        aiex.npu.dma_memcpy_nd(%dst[0, 0, 0, 0][1, 1, 1, 64][0, 0, 0, 1]) {id = 1 : i64, metadata = @from_core, issue_token = true} : memref<64xi32>
        aiex.npu.dma_memcpy_nd(%src[0, 0, 0, 0][1, 1, 4, 13][0, 0, 13, 1]) {id = 0 : i64, metadata = @to_mem} : memref<13xi32>
        aiex.npu.dma_wait {symbol = @from_core}
      }
    }
  }
}
