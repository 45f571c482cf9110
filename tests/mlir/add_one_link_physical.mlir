// add_one_link.mlir lowered by hand as aie-opt --aie-objectFifo-stateful-transform lowers it
// (createObjectFifoElements, createMemTileDMA): the mem tile holds the larger FIFO of each link
// (two 16-word buffers per link, one lock pair), and both of its DMA sides move whole 16-word
// buffers; the core's ends hold 8-word buffers, so each 16-word buffer reaches the core as two
// 8-word objects. The core loop is unrolled by the FIFO depth, as the transform unrolls it.
module {
  aie.device(npu1_1col) {
    %t00 = aie.tile(0, 0)
    %t01 = aie.tile(0, 1)
    %t02 = aie.tile(0, 2)

    %in1_b0 = aie.buffer(%t02) {sym_name = "in1_cons_buff_0"} : memref<8xi32>
    %in1_b1 = aie.buffer(%t02) {sym_name = "in1_cons_buff_1"} : memref<8xi32>
    %in1_prod = aie.lock(%t02, 0) {init = 2 : i32, sym_name = "in1_cons_prod_lock"}
    %in1_cons = aie.lock(%t02, 1) {init = 0 : i32, sym_name = "in1_cons_cons_lock"}
    %out1_b0 = aie.buffer(%t02) {sym_name = "out1_buff_0"} : memref<8xi32>
    %out1_b1 = aie.buffer(%t02) {sym_name = "out1_buff_1"} : memref<8xi32>
    %out1_prod = aie.lock(%t02, 2) {init = 2 : i32, sym_name = "out1_prod_lock"}
    %out1_cons = aie.lock(%t02, 3) {init = 0 : i32, sym_name = "out1_cons_lock"}
    %in0_b0 = aie.buffer(%t01) {sym_name = "in0_cons_buff_0"} : memref<16xi32>
    %in0_b1 = aie.buffer(%t01) {sym_name = "in0_cons_buff_1"} : memref<16xi32>
    %in0_prod = aie.lock(%t01, 0) {init = 2 : i32, sym_name = "in0_cons_prod_lock"}
    %in0_cons = aie.lock(%t01, 1) {init = 0 : i32, sym_name = "in0_cons_cons_lock"}
    %out0_b0 = aie.buffer(%t01) {sym_name = "out0_buff_0"} : memref<16xi32>
    %out0_b1 = aie.buffer(%t01) {sym_name = "out0_buff_1"} : memref<16xi32>
    %out0_prod = aie.lock(%t01, 2) {init = 2 : i32, sym_name = "out0_prod_lock"}
    %out0_cons = aie.lock(%t01, 3) {init = 0 : i32, sym_name = "out0_cons_lock"}

    aie.flow(%t00, DMA : 0, %t01, DMA : 0)
    aie.flow(%t01, DMA : 0, %t02, DMA : 0)
    aie.flow(%t02, DMA : 0, %t01, DMA : 1)
    aie.flow(%t01, DMA : 1, %t00, DMA : 0)
    aie.shim_dma_allocation @in0(%t00, MM2S, 0)
    aie.shim_dma_allocation @out0(%t00, S2MM, 0)

    aie.core(%t02) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c8 = arith.constant 8 : index
      %one = arith.constant 1 : i32
      scf.for %step = %c0 to %c8 step %c2 {
        aie.use_lock(%in1_cons, AcquireGreaterEqual, 1)
        aie.use_lock(%out1_prod, AcquireGreaterEqual, 1)
        scf.for %i = %c0 to %c8 step %c1 {
          %v = memref.load %in1_b0[%i] : memref<8xi32>
          %w = arith.addi %v, %one : i32
          memref.store %w, %out1_b0[%i] : memref<8xi32>
        }
        aie.use_lock(%in1_prod, Release, 1)
        aie.use_lock(%out1_cons, Release, 1)
        aie.use_lock(%in1_cons, AcquireGreaterEqual, 1)
        aie.use_lock(%out1_prod, AcquireGreaterEqual, 1)
        scf.for %i = %c0 to %c8 step %c1 {
          %v = memref.load %in1_b1[%i] : memref<8xi32>
          %w = arith.addi %v, %one : i32
          memref.store %w, %out1_b1[%i] : memref<8xi32>
        }
        aie.use_lock(%in1_prod, Release, 1)
        aie.use_lock(%out1_cons, Release, 1)
      }
      aie.end
    }

    aie.mem(%t02) {
      %s = aie.dma_start(S2MM, 0, ^r0, ^send)
    ^r0:
      aie.use_lock(%in1_prod, AcquireGreaterEqual, 1)
      aie.dma_bd(%in1_b0 : memref<8xi32> offset = 0 len = 8)
      aie.use_lock(%in1_cons, Release, 1)
      aie.next_bd ^r1
    ^r1:
      aie.use_lock(%in1_prod, AcquireGreaterEqual, 1)
      aie.dma_bd(%in1_b1 : memref<8xi32> offset = 0 len = 8)
      aie.use_lock(%in1_cons, Release, 1)
      aie.next_bd ^r0
    ^send:
      %m = aie.dma_start(MM2S, 0, ^s0, ^end)
    ^s0:
      aie.use_lock(%out1_cons, AcquireGreaterEqual, 1)
      aie.dma_bd(%out1_b0 : memref<8xi32> offset = 0 len = 8)
      aie.use_lock(%out1_prod, Release, 1)
      aie.next_bd ^s1
    ^s1:
      aie.use_lock(%out1_cons, AcquireGreaterEqual, 1)
      aie.dma_bd(%out1_b1 : memref<8xi32> offset = 0 len = 8)
      aie.use_lock(%out1_prod, Release, 1)
      aie.next_bd ^s0
    ^end:
      aie.end
    }

    aie.memtile_dma(%t01) {
      %a = aie.dma_start(S2MM, 0, ^in_r0, ^b)
    ^in_r0:
      aie.use_lock(%in0_prod, AcquireGreaterEqual, 1)
      aie.dma_bd(%in0_b0 : memref<16xi32> offset = 0 len = 16)
      aie.use_lock(%in0_cons, Release, 1)
      aie.next_bd ^in_r1
    ^in_r1:
      aie.use_lock(%in0_prod, AcquireGreaterEqual, 1)
      aie.dma_bd(%in0_b1 : memref<16xi32> offset = 0 len = 16)
      aie.use_lock(%in0_cons, Release, 1)
      aie.next_bd ^in_r0
    ^b:
      %b0 = aie.dma_start(MM2S, 0, ^in_s0, ^c)
    ^in_s0:
      aie.use_lock(%in0_cons, AcquireGreaterEqual, 1)
      aie.dma_bd(%in0_b0 : memref<16xi32> offset = 0 len = 16)
      aie.use_lock(%in0_prod, Release, 1)
      aie.next_bd ^in_s1
    ^in_s1:
      aie.use_lock(%in0_cons, AcquireGreaterEqual, 1)
      aie.dma_bd(%in0_b1 : memref<16xi32> offset = 0 len = 16)
      aie.use_lock(%in0_prod, Release, 1)
      aie.next_bd ^in_s0
    ^c:
      %c0 = aie.dma_start(S2MM, 1, ^out_r0, ^d)
    ^out_r0:
      aie.use_lock(%out0_prod, AcquireGreaterEqual, 1)
      aie.dma_bd(%out0_b0 : memref<16xi32> offset = 0 len = 16)
      aie.use_lock(%out0_cons, Release, 1)
      aie.next_bd ^out_r1
    ^out_r1:
      aie.use_lock(%out0_prod, AcquireGreaterEqual, 1)
      aie.dma_bd(%out0_b1 : memref<16xi32> offset = 0 len = 16)
      aie.use_lock(%out0_cons, Release, 1)
      aie.next_bd ^out_r0
    ^d:
      %d0 = aie.dma_start(MM2S, 1, ^out_s0, ^end)
    ^out_s0:
      aie.use_lock(%out0_cons, AcquireGreaterEqual, 1)
      aie.dma_bd(%out0_b0 : memref<16xi32> offset = 0 len = 16)
      aie.use_lock(%out0_prod, Release, 1)
      aie.next_bd ^out_s1
    ^out_s1:
      aie.use_lock(%out0_cons, AcquireGreaterEqual, 1)
      aie.dma_bd(%out0_b1 : memref<16xi32> offset = 0 len = 16)
      aie.use_lock(%out0_prod, Release, 1)
      aie.next_bd ^out_s0
    ^end:
      aie.end
    }

    aie.runtime_sequence(%in : memref<64xi32>, %scratch : memref<32xi32>, %out : memref<64xi32>) {
      aiex.npu.dma_memcpy_nd(%out[0, 0, 0, 0][1, 1, 1, 64][0, 0, 0, 1]) {id = 1 : i64, metadata = @out0} : memref<64xi32>
      aiex.npu.dma_memcpy_nd(%in[0, 0, 0, 0][1, 1, 1, 64][0, 0, 0, 1]) {id = 0 : i64, metadata = @in0} : memref<64xi32>
      aiex.npu.dma_wait {symbol = @out0}
    }
  }
}
