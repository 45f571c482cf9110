// Packet fan-out by packet id: the shim's MM2S 0 has two packet flows, id 3 to the core at (0, 2)
// and id 7 to the core at (0, 3). The host pushes four objects of 64 x i32 (256 B) on it, with
// ids 3, 7, 3, 7: each core receives two, calls its kernel on each and sends it back on a circuit
// flow to a shim S2MM of its own. 1 KiB goes in and comes back.
module {
  aie.device(npu2) {
    %shim = aie.tile(0, 0)
    %t0 = aie.tile(0, 2)
    %t1 = aie.tile(0, 3)

    %in0 = aie.buffer(%t0) {sym_name = "in0"} : memref<64xi32>
    %in0_free = aie.lock(%t0, 0) {init = 1 : i32, sym_name = "in0_free"}
    %in0_full = aie.lock(%t0, 1) {init = 0 : i32, sym_name = "in0_full"}
    %out0 = aie.buffer(%t0) {sym_name = "out0"} : memref<64xi32>
    %out0_free = aie.lock(%t0, 2) {init = 1 : i32, sym_name = "out0_free"}
    %out0_full = aie.lock(%t0, 3) {init = 0 : i32, sym_name = "out0_full"}
    %in1 = aie.buffer(%t1) {sym_name = "in1"} : memref<64xi32>
    %in1_free = aie.lock(%t1, 0) {init = 1 : i32, sym_name = "in1_free"}
    %in1_full = aie.lock(%t1, 1) {init = 0 : i32, sym_name = "in1_full"}
    %out1 = aie.buffer(%t1) {sym_name = "out1"} : memref<64xi32>
    %out1_free = aie.lock(%t1, 2) {init = 1 : i32, sym_name = "out1_free"}
    %out1_full = aie.lock(%t1, 3) {init = 0 : i32, sym_name = "out1_full"}

    aie.packet_flow(3) { aie.packet_source<%shim, DMA : 0> aie.packet_dest<%t0, DMA : 0> }
    aie.packet_flow(7) { aie.packet_source<%shim, DMA : 0> aie.packet_dest<%t1, DMA : 0> }
    aie.flow(%t0, DMA : 0, %shim, DMA : 0)
    aie.flow(%t1, DMA : 0, %shim, DMA : 1)

    func.func private @kernel(memref<64xi32>, memref<64xi32>)

    %core0 = aie.core(%t0) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      scf.for %i = %c0 to %c2 step %c1 {
        aie.use_lock(%in0_full, AcquireGreaterEqual, 1)
        aie.use_lock(%out0_free, AcquireGreaterEqual, 1)
        func.call @kernel(%in0, %out0) : (memref<64xi32>, memref<64xi32>) -> ()
        aie.use_lock(%in0_free, Release, 1)
        aie.use_lock(%out0_full, Release, 1)
      }
      aie.end
    }
    %core1 = aie.core(%t1) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      scf.for %i = %c0 to %c2 step %c1 {
        aie.use_lock(%in1_full, AcquireGreaterEqual, 1)
        aie.use_lock(%out1_free, AcquireGreaterEqual, 1)
        func.call @kernel(%in1, %out1) : (memref<64xi32>, memref<64xi32>) -> ()
        aie.use_lock(%in1_free, Release, 1)
        aie.use_lock(%out1_full, Release, 1)
      }
      aie.end
    }

    %mem0 = aie.mem(%t0) {
      %s = aie.dma_start(S2MM, 0, ^recv, ^send_start)
    ^recv:
      aie.use_lock(%in0_free, AcquireGreaterEqual, 1)
      aie.dma_bd(%in0 : memref<64xi32>)
      aie.use_lock(%in0_full, Release, 1)
      aie.next_bd ^recv
    ^send_start:
      %m = aie.dma_start(MM2S, 0, ^send, ^done)
    ^send:
      aie.use_lock(%out0_full, AcquireGreaterEqual, 1)
      aie.dma_bd(%out0 : memref<64xi32>)
      aie.use_lock(%out0_free, Release, 1)
      aie.next_bd ^send
    ^done:
      aie.end
    }
    %mem1 = aie.mem(%t1) {
      %s = aie.dma_start(S2MM, 0, ^recv, ^send_start)
    ^recv:
      aie.use_lock(%in1_free, AcquireGreaterEqual, 1)
      aie.dma_bd(%in1 : memref<64xi32>)
      aie.use_lock(%in1_full, Release, 1)
      aie.next_bd ^recv
    ^send_start:
      %m = aie.dma_start(MM2S, 0, ^send, ^done)
    ^send:
      aie.use_lock(%out1_full, AcquireGreaterEqual, 1)
      aie.dma_bd(%out1 : memref<64xi32>)
      aie.use_lock(%out1_free, Release, 1)
      aie.next_bd ^send
    ^done:
      aie.end
    }

    aie.shim_dma_allocation @in (%shim, MM2S, 0)
    aie.shim_dma_allocation @back0 (%shim, S2MM, 0)
    aie.shim_dma_allocation @back1 (%shim, S2MM, 1)

    aie.runtime_sequence(%src: memref<256xi32>, %dst: memref<256xi32>) {
      aiex.npu.dma_memcpy_nd(%dst[0, 0, 0, 0][1, 1, 2, 64][0, 0, 128, 1]) {id = 4 : i64, metadata = @back0, issue_token = true} : memref<256xi32>
      aiex.npu.dma_memcpy_nd(%dst[0, 0, 0, 64][1, 1, 2, 64][0, 0, 128, 1]) {id = 5 : i64, metadata = @back1, issue_token = true} : memref<256xi32>
      aiex.npu.dma_memcpy_nd(%src[0, 0, 0, 0][1, 1, 1, 64][0, 0, 0, 1], packet = <pkt_id = 3, pkt_type = 0>) {id = 0 : i64, metadata = @in} : memref<256xi32>
      aiex.npu.dma_memcpy_nd(%src[0, 0, 0, 64][1, 1, 1, 64][0, 0, 0, 1], packet = <pkt_id = 7, pkt_type = 0>) {id = 1 : i64, metadata = @in} : memref<256xi32>
      aiex.npu.dma_memcpy_nd(%src[0, 0, 0, 128][1, 1, 1, 64][0, 0, 0, 1], packet = <pkt_id = 3, pkt_type = 0>) {id = 2 : i64, metadata = @in} : memref<256xi32>
      aiex.npu.dma_memcpy_nd(%src[0, 0, 0, 192][1, 1, 1, 64][0, 0, 0, 1], packet = <pkt_id = 7, pkt_type = 0>) {id = 3 : i64, metadata = @in} : memref<256xi32>
      aiex.npu.dma_wait {symbol = @back0}
      aiex.npu.dma_wait {symbol = @back1}
    }
  }
}
