// objectfifo_passthrough.mlir traced as IRON's trace utilities set it up, by raw register writes
// in the runtime sequence (the form of mlir-aie's mlir_trace_example/aie_trace.mlir): packet flows
// from the core's and the shim's trace ports to shim S2MM 1; trace control, trace event, timer and
// stream-switch event-port registers written one word at a time and as a block; the trace
// channel's control register masked; a shim BD for the trace buffer, patched with the trace
// buffer's address and pushed to S2MM 1's task queue; broadcast and user events that start and
// stop the trace. None of it moves the design's data.
module {
  aie.device(npu2) {
    %shim = aie.tile(0, 0)
    %core_tile = aie.tile(0, 2)
    aie.objectfifo @to_core(%shim, {%core_tile}, 2 : i32) : !aie.objectfifo<memref<256xi32>>
    aie.objectfifo @from_core(%core_tile, {%shim}, 2 : i32) : !aie.objectfifo<memref<256xi32>>

    aie.packet_flow(1) {
      aie.packet_source<%core_tile, Trace : 0>
      aie.packet_dest<%shim, DMA : 1>
    } {keep_pkt_header = true}
    aie.packet_flow(2) { aie.packet_source<%shim, Trace : 0> aie.packet_dest<%shim, DMA : 1> } {keep_pkt_header = true}
    memref.global "private" constant @trace_events : memref<2xi32> = dense<[1260724769, 439168079]>

    func.func private @kernel(memref<256xi32>, memref<256xi32>)

    aie.core(%core_tile) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      scf.for %i = %c0 to %c4 step %c1 {
        %in = aie.objectfifo.acquire @to_core(Consume, 1) : !aie.objectfifosubview<memref<256xi32>>
        %a = aie.objectfifo.subview.access %in[0] : !aie.objectfifosubview<memref<256xi32>> -> memref<256xi32>
        %out = aie.objectfifo.acquire @from_core(Produce, 1) : !aie.objectfifosubview<memref<256xi32>>
        %b = aie.objectfifo.subview.access %out[0] : !aie.objectfifosubview<memref<256xi32>> -> memref<256xi32>
        func.call @kernel(%a, %b) : (memref<256xi32>, memref<256xi32>) -> ()
        aie.objectfifo.release @to_core(Consume, 1)
        aie.objectfifo.release @from_core(Produce, 1)
      }
      aie.end
    }

    aie.runtime_sequence(%src: memref<1024xi32>, %dst: memref<1024xi32>) {
      aiex.npu.write32 {address = 213200 : ui32, column = 0 : i32, row = 2 : i32, value = 2038038528 : ui32}
      aiex.npu.write32 {address = 213204 : ui32, column = 0 : i32, row = 2 : i32, value = 1 : ui32}
      %events = memref.get_global @trace_events : memref<2xi32>
      aiex.npu.blockwrite(%events) {address = 213216 : ui32, column = 0 : i32, row = 2 : i32} : memref<2xi32>
      aiex.npu.write32 {address = 261888 : ui32, column = 0 : i32, row = 2 : i32, value = 289 : ui32}
      aiex.npu.write32 {address = 212992 : ui32, column = 0 : i32, row = 2 : i32, value = 31232 : ui32}
      aiex.npu.write32 {address = 213200 : ui32, column = 0 : i32, row = 0 : i32, value = 2122252288 : ui32}
      aiex.npu.write32 {address = 212992 : ui32, column = 0 : i32, row = 0 : i32, value = 32512 : ui32}
      aiex.npu.writebd {bd_id = 15 : i32, buffer_length = 8192 : i32, buffer_offset = 0 : i32, column = 0 : i32, row = 0 : i32, d0_size = 0 : i32, d0_stride = 0 : i32, d0_zero_after = 0 : i32, d0_zero_before = 0 : i32, d1_size = 0 : i32, d1_stride = 0 : i32, d1_zero_after = 0 : i32, d1_zero_before = 0 : i32, d2_size = 0 : i32, d2_stride = 0 : i32, d2_zero_after = 0 : i32, d2_zero_before = 0 : i32, burst_length = 64 : i32, enable_packet = 1 : i32, iteration_current = 0 : i32, iteration_size = 0 : i32, iteration_stride = 0 : i32, lock_acq_enable = 0 : i32, lock_acq_id = 0 : i32, lock_acq_val = 0 : i32, lock_rel_id = 0 : i32, lock_rel_val = 0 : i32, next_bd = 0 : i32, out_of_order_id = 0 : i32, packet_id = 0 : i32, packet_type = 0 : i32, use_next_bd = 0 : i32, valid_bd = 1 : i32}
      aiex.npu.address_patch {addr = 119268 : ui32, arg_idx = 4 : i32, arg_plus = 0 : i32}
      aiex.npu.maskwrite32 {address = 119304 : ui32, column = 0 : i32, mask = 7936 : ui32, row = 0 : i32, value = 3840 : ui32}
      aiex.npu.write32 {address = 119308 : ui32, column = 0 : i32, row = 0 : i32, value = 2147483663 : ui32}
      aiex.npu.write32 {address = 213068 : ui32, column = 0 : i32, row = 0 : i32, value = 127 : ui32}
      aiex.npu.write32 {address = 213000 : ui32, column = 0 : i32, row = 0 : i32, value = 127 : ui32}
      %c0 = arith.constant 0 : i64
      %c1 = arith.constant 1 : i64
      %c4 = arith.constant 4 : i64
      %c256 = arith.constant 256 : i64
      aiex.npu.dma_memcpy_nd(%src[%c0, %c0, %c0, %c0][%c4, %c1, %c1, %c256][%c0, %c0, %c0, %c1])
          {id = 0 : i64, metadata = @to_core} : memref<1024xi32>
      aiex.npu.dma_memcpy_nd(%dst[%c0, %c0, %c0, %c0][%c4, %c1, %c1, %c256][%c0, %c0, %c0, %c1])
          {id = 1 : i64, metadata = @from_core, issue_token = true} : memref<1024xi32>
      aiex.npu.dma_wait {symbol = @from_core}
      aiex.npu.write32 {address = 213064 : ui32, column = 0 : i32, row = 0 : i32, value = 126 : ui32}
      aiex.npu.write32 {address = 213000 : ui32, column = 0 : i32, row = 0 : i32, value = 126 : ui32}
    }
  }
}
