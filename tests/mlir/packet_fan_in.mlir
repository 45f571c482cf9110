// Packet fan-in: two compute tiles each make four objects of 64 x i32 (256 B), one kernel call
// each, and send every object as one packet into the same shim S2MM channel (two aie.packet_flow
// ops with one destination). The host receives all eight objects, 2 KiB, in one task.
module {
  aie.device(npu2) {
    %shim = aie.tile(0, 0)
    %t0 = aie.tile(0, 2)
    %t1 = aie.tile(0, 3)

    %buf0 = aie.buffer(%t0) {sym_name = "buf0"} : memref<64xi32>
    %free0 = aie.lock(%t0, 0) {init = 1 : i32, sym_name = "free0"}
    %full0 = aie.lock(%t0, 1) {init = 0 : i32, sym_name = "full0"}
    %buf1 = aie.buffer(%t1) {sym_name = "buf1"} : memref<64xi32>
    %free1 = aie.lock(%t1, 0) {init = 1 : i32, sym_name = "free1"}
    %full1 = aie.lock(%t1, 1) {init = 0 : i32, sym_name = "full1"}

    aie.packet_flow(0) {
      aie.packet_source<%t0, DMA : 0>
      aie.packet_dest<%shim, DMA : 0>
    }
    aie.packet_flow(1) {
      aie.packet_source<%t1, DMA : 0>
      aie.packet_dest<%shim, DMA : 0>
    }

    func.func private @kernel(memref<64xi32>)

    %core0 = aie.core(%t0) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      scf.for %i = %c0 to %c4 step %c1 {
        aie.use_lock(%free0, AcquireGreaterEqual, 1)
        func.call @kernel(%buf0) : (memref<64xi32>) -> ()
        aie.use_lock(%full0, Release, 1)
      }
      aie.end
    }
    %core1 = aie.core(%t1) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      scf.for %i = %c0 to %c4 step %c1 {
        aie.use_lock(%free1, AcquireGreaterEqual, 1)
        func.call @kernel(%buf1) : (memref<64xi32>) -> ()
        aie.use_lock(%full1, Release, 1)
      }
      aie.end
    }

    %mem0 = aie.mem(%t0) {
      %m = aie.dma_start(MM2S, 0, ^send, ^done)
    ^send:
      aie.use_lock(%full0, AcquireGreaterEqual, 1)
      aie.dma_bd(%buf0 : memref<64xi32>) {packet = #aie.packet_info<pkt_type = 0, pkt_id = 0>}
      aie.use_lock(%free0, Release, 1)
      aie.next_bd ^send
    ^done:
      aie.end
    }
    %mem1 = aie.mem(%t1) {
      %m = aie.dma_start(MM2S, 0, ^send, ^done)
    ^send:
      aie.use_lock(%full1, AcquireGreaterEqual, 1)
      aie.dma_bd(%buf1 : memref<64xi32>) {packet = #aie.packet_info<pkt_type = 0, pkt_id = 1>}
      aie.use_lock(%free1, Release, 1)
      aie.next_bd ^send
    ^done:
      aie.end
    }

    aie.shim_dma_allocation @out (%shim, S2MM, 0)

    aie.runtime_sequence(%dst: memref<512xi32>) {
      aiex.npu.dma_memcpy_nd(%dst[0, 0, 0, 0][1, 1, 1, 512][0, 0, 0, 1]) {id = 0 : i64, metadata = @out, issue_token = true} : memref<512xi32>
      aiex.npu.dma_wait {symbol = @out}
    }
  }
}
